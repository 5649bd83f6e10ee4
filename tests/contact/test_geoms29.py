"""Every geom type takes part in contact (issue 29): ellipsoids and cylinders on bodies and in the
world, MJCF hfields (data in the file, from a PNG, or given at run time).

Oracles: the exact ellipsoid distance (closest point by a 1-D root find), central differences for
the normals, MuJoCo's own contacts (``mj_forward``: depth and position) and MuJoCo's rest heights,
and the analytic rest heights of a ball on a slope, a cylinder and an ellipsoid."""

from __future__ import annotations

import numpy as np
import pytest

import pbsim
from pbsim.contact import Cylinder, Ellipsoid, HeightField, contact_query, make_scene, pair_contacts
from pbsim.contact.points import ellipsoid_points
from pbsim.contact.sdf import sdf_cylinder, sdf_ellipsoid, sdf_heightfield, sdf_heightfield_posed
from pbsim.errors import InputError

mujoco = pytest.importorskip("mujoco")


def rot(ax, ay, az):
    """Rotation of MuJoCo's default euler sequence (xyz, intrinsic), radians."""
    cx, sx, cy, sy, cz, sz = np.cos(ax), np.sin(ax), np.cos(ay), np.sin(ay), np.cos(az), np.sin(az)
    Rx = np.array([[1, 0, 0], [0, cx, -sx], [0, sx, cx]])
    Ry = np.array([[cy, 0, sy], [0, 1, 0], [-sy, 0, cy]])
    Rz = np.array([[cz, -sz, 0], [sz, cz, 0], [0, 0, 1]])
    return Rx @ Ry @ Rz


def exact_ellipsoid_distance(s, y):
    """Signed distance of point y (ellipsoid frame) to the ellipsoid of semi-axes s: the closest
    point q_i = y_i s_i^2 / (s_i^2 + t) with t the root of sum (s_i y_i / (s_i^2 + t))^2 = 1 in
    (-min s^2, inf), by bisection; inside on the focal disc (no root there) the degenerate closest
    point.  (Cross-checked against a brute-force search over the surface below.)"""
    s2 = s * s
    m2 = s2.min()
    f = lambda t: np.sum((s * y / (s2 + t)) ** 2) - 1.0  # noqa: E731  decreasing in t
    lo = -m2 * (1 - 1e-14)
    if f(lo) <= 0:
        M = s2 == m2
        q = np.where(M, 0.0, s2 * y / np.where(M, 1.0, s2 - m2))
        u = np.where(M, y, 0.0)
        u = (
            u / np.linalg.norm(u)
            if np.linalg.norm(u) > 0
            else np.where(np.arange(3) == np.flatnonzero(M)[-1], 1.0, 0.0)
        )
        q = q + np.sqrt(max(1 - np.sum((q / s) ** 2), 0.0) * m2) * u
        return -np.linalg.norm(y - q)
    hi = 1.0
    while f(hi) > 0:
        hi *= 2
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if f(mid) > 0 else (lo, mid)
    q = s2 * y / (s2 + 0.5 * (lo + hi))
    d = np.linalg.norm(y - q)
    return d if np.sum((y / s) ** 2) > 1 else -d


def brute_ellipsoid_distance(s, y):
    """The same by brute force: the nearest of a dense surface grid, refined by Nelder-Mead."""
    from scipy.optimize import minimize

    th, ph = np.meshgrid(np.linspace(0, np.pi, 181), np.linspace(0, 2 * np.pi, 361))
    X = np.stack([s[0] * np.sin(th) * np.cos(ph), s[1] * np.sin(th) * np.sin(ph), s[2] * np.cos(th)], -1).reshape(-1, 3)
    k = int(np.argmin(((X - y) ** 2).sum(1)))
    pt = lambda v: s * [np.sin(v[0]) * np.cos(v[1]), np.sin(v[0]) * np.sin(v[1]), np.cos(v[0])]  # noqa: E731
    r = minimize(
        lambda v: np.sum((pt(v) - y) ** 2),
        [np.arccos(np.clip(X[k, 2] / s[2], -1, 1)), np.arctan2(X[k, 1] / s[1], X[k, 0] / s[0])],
        method="Nelder-Mead",
        options=dict(xatol=1e-12, fatol=1e-24, maxiter=4000),
    )
    return np.sqrt(r.fun) if np.sum((y / s) ** 2) > 1 else -np.sqrt(r.fun)


# ---------------------------------------------------------------------- the distances
@pytest.mark.parametrize("s", [(0.3, 0.2, 0.1), (0.1, 0.1, 0.3), (0.3, 0.3, 0.1), (0.15, 0.15, 0.15), (1, 0.1, 0.01)])
def test_ellipsoid_distance_is_exact(s):
    """sdf_ellipsoid is the exact signed distance (to 1e-12 m) inside and out, on the focal disc too,
    and its normal is its gradient (central differences) away from the medial set."""
    s = np.array(s, float)
    R, p = rot(0.3, -0.5, 1.1), np.array([0.2, -0.1, 0.4])
    e = np.r_[R.reshape(-1), p, s]
    rng = np.random.default_rng(1)
    for k in range(400):
        u = rng.normal(size=3)
        y = s * u / np.linalg.norm(u) * rng.uniform(0.01, 2.5)
        if k % 5 == 0:
            y[np.argmin(s)] = 0.0  # on the focal plane: the degenerate closest points inside
        x = R @ y + p
        phi, *n = sdf_ellipsoid(e, *x)
        assert phi == pytest.approx(exact_ellipsoid_distance(s, y), abs=1e-12)
        if k < 12:
            assert phi == pytest.approx(brute_ellipsoid_distance(s, y), abs=1e-7)
        h = 1e-7
        g = np.array(
            [(sdf_ellipsoid(e, *(x + h * E))[0] - sdf_ellipsoid(e, *(x - h * E))[0]) / (2 * h) for E in np.eye(3)]
        )
        if abs(np.linalg.norm(g) - 1) < 1e-4:  # off the medial set (where the gradient jumps)
            assert np.allclose(g, n, atol=2e-6)
    u = np.array([0.3, -0.8, 0.5])
    y = s * u / np.linalg.norm(u)  # on the surface: zero, the surface normal
    phi, *n = sdf_ellipsoid(e, *(R @ y + p))
    nt = R @ (y / s**2)
    assert abs(phi) < 1e-14 and np.allclose(n, nt / np.linalg.norm(nt), atol=1e-12)
    phi, *n = sdf_ellipsoid(e, *p)  # the centre: the smallest semi-axis deep, along it
    assert phi == pytest.approx(-s.min())
    assert any(abs(abs(np.array(n) @ R[:, i]) - 1) < 1e-12 for i in np.flatnonzero(s == s.min()))


def test_cylinder_distance_and_normal():
    """sdf_cylinder (world cylinders use it too): exact distances at known points, normal =
    gradient (central differences) off the medial surfaces."""
    R, p = rot(0.4, 0.2, -0.7), np.array([0.1, 0.2, 0.3])
    r, h = 0.1, 0.25
    e = np.r_[R.reshape(-1), p, r, h]
    for y, d in [
        ((0.3, 0, 0), 0.2),
        ((0, 0, 0.4), 0.15),
        ((0.13, 0, 0.29), 0.05),
        ((0.05, 0, 0), -0.05),
        ((0, 0, 0.2), -0.05),
    ]:
        assert sdf_cylinder(e, *(R @ np.array(y) + p))[0] == pytest.approx(d, abs=1e-12)
    rng = np.random.default_rng(2)
    for _ in range(100):
        y = rng.uniform(-0.3, 0.3, 3)
        rho, z = np.hypot(y[0], y[1]), abs(y[2])
        if abs((rho - r) - (z - h)) < 1e-3 and rho < r and z < h:
            continue  # the medial surface inside, where the gradient jumps
        x = R @ y + p
        phi, *n = sdf_cylinder(e, *x)
        g = np.array(
            [(sdf_cylinder(e, *(x + 1e-7 * E))[0] - sdf_cylinder(e, *(x - 1e-7 * E))[0]) / 2e-7 for E in np.eye(3)]
        )
        assert np.allclose(g, n, atol=1e-6)


def test_ellipsoid_points_are_inscribed_spheres():
    """ellipsoid_points: every sphere inside the ellipsoid; the support falls short by at most 3.6 %
    of the largest semi-axis (0 for a sphere, 0.8 % for a prolate one), none on the poles."""
    rng = np.random.default_rng(0)
    D = rng.normal(size=(50000, 3))
    D /= np.linalg.norm(D, axis=1, keepdims=True)
    for s, bound in [((1, 1, 1), 1e-12), ((1, 0.3, 0.3), 0.008), ((0.2, 0.6, 0.2), 0.008), ((1, 1, 0.1), 0.036),
                     ((0.3, 1, 0.5), 0.036), ((1, 0.6, 0.3), 0.036)]:  # fmt: skip
        s = np.array(s, float)
        L, r = ellipsoid_points(s)
        assert len(L) <= 25
        for x, rr in zip(L, r):  # inside: the sphere's farthest point along any direction is within
            assert np.all(D @ x + rr <= np.sqrt(((D * s) ** 2).sum(1)) + 1e-12)
        gap = np.sqrt(((D * s) ** 2).sum(1)) - (D @ L.T + r).max(1)
        assert gap.max() <= bound * s.max(), (s, gap.max())
        for ax in range(3):  # the six poles are exact
            for sg in (1, -1):
                d = np.zeros(3)
                d[ax] = sg
                assert (L @ d + r).max() == pytest.approx(s[ax], abs=1e-12)


def test_posed_bounded_heightfield():
    """A heightfield in a posed frame equals the same one evaluated in its frame; bounded, it has no
    contact outside its rectangle (MuJoCo's hfield)."""
    H = np.random.default_rng(3).uniform(0, 0.2, (5, 4))
    hf = HeightField(H, (-1, 1, -0.6, 0.6), R=rot(0, 0, 0.5), p=(0.3, -0.2, 0.1), bounded=True)
    from pbsim.contact.environment import pack_environment

    pk = pack_environment([hf, HeightField(H, (-1, 1, -0.6, 0.6))])
    assert pk["hf_meta"][:, 3].tolist() == [3, 0]
    for y in [(0.2, 0.1, 0.15), (-0.45, 0.3, 0.0), (0.9, -0.4, 0.3)]:  # in its frame, off cell borders
        y = np.array(y)
        x = hf.R @ y + hf.p
        phi, *n = sdf_heightfield_posed(pk["hf_meta"][0], pk["hf_geom"][0], pk["hf_data"], *x)
        phi0, *n0 = sdf_heightfield(pk["hf_meta"][1], pk["hf_geom"][1], pk["hf_data"], *y)
        assert phi == pytest.approx(phi0, abs=1e-14) and np.allclose(n, hf.R @ np.array(n0), atol=1e-14)
    out = hf.R @ np.array([1.2, 0.0, -0.5]) + hf.p  # beyond x1, under the surface's height
    assert sdf_heightfield_posed(pk["hf_meta"][0], pk["hf_geom"][0], pk["hf_data"], *out)[0] > 1e29


# ---------------------------------------------------------------------- MJCF and MuJoCo
def write(tmp_path, xml, name="m.xml"):
    f = tmp_path / name
    f.write_text(xml)
    return str(f)


def mj_contacts(path, qpos=None, hfield_data=None):
    """MuJoCo's contacts at qpos: [(geom1 name, geom2 name, dist, pos, frame normal)]."""
    mj = mujoco.MjModel.from_xml_path(path)
    if hfield_data is not None:
        mj.hfield_data[:] = hfield_data
    d = mujoco.MjData(mj)
    if qpos is not None:
        d.qpos[:] = qpos
    mujoco.mj_forward(mj, d)
    n = lambda g: mujoco.mj_id2name(mj, mujoco.mjtObj.mjOBJ_GEOM, g)  # noqa: E731
    return [(n(c.geom1), n(c.geom2), c.dist, np.array(c.pos), np.array(c.frame[:3])) for c in d.contact[: d.ncon]]


FREE = """<mujoco><option timestep="0.001"/><worldbody><geom name="floor" type="plane" size="5 5 0.1"/>
<body name="b" pos="{pos}" euler="{euler}"><freejoint/>{geom}</body></worldbody></mujoco>"""

ELL = '<geom name="g" type="ellipsoid" size="0.1 0.08 0.05" mass="1"/>'
CYL = '<geom name="g" type="cylinder" size="0.05 0.1" mass="1"/>'


@pytest.mark.parametrize(
    "geom,euler,bound",
    [(ELL, "30 0 20", 0.036 * 0.1), (ELL, "0 0 0", 1e-9), (CYL, "30 0 0", 1e-9), (CYL, "0 0 0", 1e-9)],
)
def test_contact_with_the_floor_against_mujoco(tmp_path, geom, euler, bound):
    """A tilted ellipsoid / cylinder put 5 mm into the floor: pbsim's deepest contact point has
    MuJoCo's depth (within the sampling bound: exact where a sample is the lowest point -- a pole, a
    rim point) at MuJoCo's contact position."""
    path = write(tmp_path, FREE.format(pos="0 0 0.5", euler=euler, geom=geom))
    mj = mujoco.MjModel.from_xml_path(path)
    d = mujoco.MjData(mj)
    mujoco.mj_forward(mj, d)
    R = d.xmat[1].reshape(3, 3)
    s = mj.geom_size[1] if "ellipsoid" in geom else None
    if s is not None:  # lowest point of the ellipsoid: support along -z
        low = np.sqrt(((R.T @ [0, 0, 1] * s) ** 2).sum())
    else:
        r, h = mj.geom_size[1, :2]
        a = R[2]
        low = r * np.hypot(a[0], a[1]) + h * abs(a[2])
    qpos = d.qpos.copy()
    qpos[2] = low - 0.005
    c = min(mj_contacts(path, qpos), key=lambda c: c[2])  # MuJoCo's deepest
    m = pbsim.load(path)
    sc = make_scene(m, stiffness=1.0)
    r = contact_query(m, sc, qpos)
    k = int(np.argmax(r["d"][0]))
    depth = r["d"][0, k]
    assert abs(-c[2] - 0.005) < 1e-6  # MuJoCo: the exact depth
    assert 0.005 - bound - 1e-9 <= depth <= 0.005 + 1e-9, (depth, c[2])
    if bound < 1e-6:  # the contact point: MuJoCo's is midway through the overlap, pbsim's on the body's surface
        assert np.allclose(r["X"][0, k, :2], c[3][:2], atol=2e-3)
        assert np.allclose(r["n"][0, k], [0, 0, 1])


@pytest.mark.parametrize(
    "name,geom,euler,npts",
    [
        ("ellipsoid", ELL, "0 0 20", 1),
        ("cylinder upright", CYL, "0 0 0", 8),
        ("cylinder on its side", CYL, "0 90 0", 2),
    ],
)
def test_rest_height_on_the_floor_against_mujoco(tmp_path, name, geom, euler, npts):
    """Dropped from 0.3 m onto the floor, euler at 1 ms for 2 s with the penalty sized for 0.2 mm of
    penetration: rest height within 1 mm of MuJoCo's (measured: 0.2 mm or less), same orientation, at
    rest.  (friction_eps 0.05 m/s: with the default 0.01 the upright cylinder's regularised friction
    on 8 rim points is stiffer than explicit Euler at 1 ms takes -- ``dt mu N_total / (eps m_eff)`` = 2.7
    > 2 for the sliding-rocking mode -- and it chatters at 0.075 rad/s, its pose still.)"""
    path = write(tmp_path, FREE.format(pos="0 0 0.3", euler=euler, geom=geom))
    mj = mujoco.MjModel.from_xml_path(path)
    d = mujoco.MjData(mj)
    for _ in range(2000):
        mujoco.mj_step(mj, d)
    m = pbsim.load(path)
    sc = make_scene(m, stiffness=9.81 / (npts * 2e-4), friction_eps=0.05)
    tr = pbsim.rollout(m, "euler", 1e-3, 2000, scene=sc, record_every=500)
    assert abs(tr.q[-1, 2] - d.qpos[2]) < 1e-3, (tr.q[-1, 2], d.qpos[2])
    assert abs(abs(tr.q[-1, 3:7] @ d.qpos[3:7]) - 1) < 1e-4
    assert np.abs(tr.v[-1]).max() < 1e-2


# a ball on a vertical slide joint (frictionless: condim 1) over world shapes: it rests where it
# touches, at a height known in closed form
SLIDE = """<mujoco><option timestep="0.001"/>
  <asset>
    <hfield name="slope" nrow="3" ncol="4" size="1 0.8 0.4 0.1" elevation="0 1 2 3  0 1 2 3  0 1 2 3"/>
    <hfield name="later" nrow="4" ncol="3" size="0.6 0.9 0.5 0.1"/>
  </asset>
  <worldbody>
    <geom name="wcyl" type="cylinder" size="0.2 0.5" pos="0 0 0.3" euler="90 0 0"/>
    <geom name="well" type="ellipsoid" size="0.3 0.2 0.15" pos="3 0 0.3" euler="0 0 30"/>
    <geom name="hf" type="hfield" hfield="slope" pos="6 0 0.2"/>
    <geom name="hfr" type="hfield" hfield="later" pos="9 0 0.1" euler="0 0 90"/>
    <body name="b1"
      pos="0.1 0 1"><joint name="z1" type="slide" axis="0 0 1"/><geom name="s1" type="sphere" size="0.05" mass="1" condim="1"/></body>
    <body name="b2"
      pos="3.1 0.05 1"><joint name="z2" type="slide" axis="0 0 1"/><geom name="s2" type="sphere" size="0.05" mass="1" condim="1"/></body>
    <body name="b3"
      pos="6.2 0.1 1"><joint name="z3" type="slide" axis="0 0 1"/><geom name="s3" type="sphere" size="0.05" mass="1" condim="1"/></body>
    <body name="b4"
      pos="9.1 0.2 1"><joint name="z4" type="slide" axis="0 0 1"/><geom name="s4" type="sphere" size="0.05" mass="1" condim="1"/></body>
  </worldbody>
</mujoco>"""  # fmt: skip

LATER = np.array([[0.0, 0.2, 0.4], [0.1, 0.3, 0.5], [0.2, 0.4, 0.6], [0.3, 0.5, 0.7]])  # run-time data (nrow, ncol)


def test_ball_rests_on_world_cylinder_ellipsoid_and_hfields_against_mujoco(tmp_path):
    """Four balls (r = 5 cm, 1 kg, on vertical slides) dropped onto a horizontal world cylinder 10 cm
    off its top line, a turned world ellipsoid, a sloped hfield (slope 0.4 * 3 / 2 / 3 per m
    along x, the file's data) and a hfield turned by 90 degrees whose data is given at run time:
    rest heights within 1 mm of MuJoCo's and 0.5 mm of the closed form (penalty sized for 0.2 mm),
    and their contact points and normals at a 5 mm overlap equal MuJoCo's."""
    path = write(tmp_path, SLIDE)
    mj = mujoco.MjModel.from_xml_path(path)
    adr = mj.hfield_adr[1]
    mj.hfield_data[adr : adr + 12] = LATER.reshape(-1)
    d = mujoco.MjData(mj)
    for _ in range(3000):
        mujoco.mj_step(mj, d)
    m = pbsim.load(path, hfield_data={"later": LATER})
    assert not [n for n in m.notes if "flat" in n]
    sc = make_scene(m, stiffness=9.81 / 2e-4, mu=0.0)
    tr = pbsim.rollout(m, "euler", 1e-3, 3000, scene=sc, record_every=1000)
    z = tr.q[-1] + np.array([1.0, 1.0, 1.0, 1.0])  # slide q is the offset from the body's z = 1
    zm = d.qpos + 1.0
    # closed forms
    r = 0.05
    z1 = 0.3 + np.sqrt((0.2 + r) ** 2 - 0.1**2)
    s = np.array([0.3, 0.2, 0.15])
    Re = rot(0, 0, np.radians(30))
    lo, hi = 0.0, 0.5  # the ball centre on the ellipsoid's offset surface above (3.1, 0.05): bisection
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if exact_ellipsoid_distance(s, Re.T @ np.array([0.1, 0.05, mid])) < r else (lo, mid)
    z2 = 0.3 + lo
    slope = 0.4 / 2  # data 0..1 over x in [-1, 1]: dz/dx
    h3 = 0.2 + 0.4 * (0.2 + 1) / 2  # height under x = 6.2 (0.2 in the hfield's frame)
    z3 = h3 + r * np.sqrt(1 + slope**2)
    # turned by 90 deg: the hfield's x is world y, its y is world -x; ball at local (0.2, -0.1)
    xl, yl = 0.2, -0.1
    c = (xl + 0.6) / 1.2 * 2  # column coordinate (ncol 3)
    rr = (yl + 0.9) / 1.8 * 3  # row coordinate (nrow 4)
    i, j = int(c), int(rr)
    tx, ty = c - i, rr - j
    h = (LATER[j, i] * (1 - tx) + LATER[j, i + 1] * tx) * (1 - ty) + (
        LATER[j + 1, i] * (1 - tx) + LATER[j + 1, i + 1] * tx
    ) * ty
    gx, gy = 0.5 * 0.2 / 0.6, 0.5 * 0.1 / 0.6  # planar data: d(0.5 data)/dx, /dy
    z4 = 0.1 + 0.5 * h + r * np.sqrt(1 + gx**2 + gy**2)
    closed = np.array([z1, z2, z3, z4])
    assert np.all(np.abs(z - zm) < 1e-3), (z, zm)
    assert np.all(np.abs(z - closed) < 5e-4), (z, closed)
    # contact points and normals at a 5 mm overlap
    q = closed - 0.005 - 1.0
    cs = mj_contacts(path, q, np.r_[mj.hfield_data[:adr], LATER.reshape(-1)])
    res = contact_query(m, make_scene(m, stiffness=1.0, mu=0.0), q)
    for k, ball in enumerate(("s1", "s2", "s3", "s4")):
        c = min((c for c in cs if ball in c[:2]), key=lambda c: c[2])  # MuJoCo's deepest (one per hfield prism)
        n = c[4] if c[1] == ball else -c[4]  # MuJoCo's normal points from geom1 to geom2: out of the world shape
        assert res["d"][0, k] == pytest.approx(-c[2], abs=5e-4), ball
        assert np.allclose(res["n"][0, k], n, atol=2e-3), (ball, res["n"][0, k], n)


def test_body_ellipsoid_and_cylinder_touch_other_bodies(tmp_path):
    """Between bodies: a sphere inside a free ellipsoid and a free box on a free cylinder's cap --
    pbsim's deepest point has MuJoCo's depth; an ellipsoid's spheres against a box."""
    xml = """<mujoco><worldbody>
      <body name="e" pos="0 0 1"><freejoint/><geom name="ge" type="ellipsoid" size="0.2 0.1 0.05"/></body>
      <body name="s" pos="0.24 0 1"><freejoint/><geom name="gs" type="sphere" size="0.05"/></body>
      <body name="c" pos="2 0 1"><freejoint/><geom name="gc" type="cylinder" size="0.1 0.05"/></body>
      <body name="b" pos="2 0.05 1.098"><freejoint/><geom name="gb" type="box" size="0.05 0.05 0.05"/></body>
      <body name="e2" pos="4 0 1.147" euler="0 0 30"><freejoint/><geom name="ge2" type="ellipsoid" size="0.2 0.1 0.05"/></body>
      <body name="b2"
      pos="4 0 1"><freejoint/><geom name="gb2" type="box" size="0.3 0.3 0.1"/></body>
    </worldbody></mujoco>"""
    path = write(tmp_path, xml)
    m = pbsim.load(path)
    sc = make_scene(m, ground=None, stiffness=1.0)
    got = pair_contacts(m, sc, m.q_default)
    theirs = {frozenset((c[0], c[1])): -c[2] for c in mj_contacts(path)}
    body = {n: m.body_index(n) for n in ("e", "s", "c", "b", "e2", "b2")}
    for a, b, ga, gb in (("s", "e", "gs", "ge"), ("b", "c", "gb", "gc"), ("e2", "b2", "ge2", "gb2")):
        sel = ((got["body_a"] == body[a]) & (got["body_b"] == body[b])) | (
            (got["body_a"] == body[b]) & (got["body_b"] == body[a])
        )
        ours = got["depth"][sel].max()
        assert ours == pytest.approx(theirs[frozenset((ga, gb))], abs=2e-4), (a, b, ours, theirs)


# ---------------------------------------------------------------------- hfield input
def test_hfield_from_png_and_file_data_match_mujoco(tmp_path):
    """An hfield from a PNG (MuJoCo reads the gray levels, normalised) and one from the file's
    elevation, turned and shifted: pbsim's surface passes through MuJoCo's (mj_ray) at every grid
    node and at random points inside the cells (the same two triangles a cell), and a note names a
    flat hfield."""
    from PIL import Image

    rng = np.random.default_rng(5)
    img = (rng.uniform(0, 255, (6, 5))).astype(np.uint8)
    Image.fromarray(img).save(tmp_path / "hf.png")
    elev = rng.uniform(0, 1, (4, 6))
    xml = f"""<mujoco><asset><hfield name="png" file="hf.png" size="1 1.5 0.3 0.1"/>
      <hfield name="el" nrow="4" ncol="6" size="0.5 0.4 0.2 0.05" elevation="{' '.join(map(str, elev.reshape(-1)))}"/>
      <hfield name="flat" nrow="2" ncol="2" size="1 1 1 1"/></asset>
      <worldbody><geom name="a" type="hfield" hfield="png" pos="0 0 0.1"/>
      <geom name="b" type="hfield" hfield="el" pos="3 1 -0.2" euler="0 0 40"/>
      <geom name="c" type="hfield" hfield="flat" pos="-5 0 0"/>
      <body pos="0 0 2"><freejoint/><geom type="sphere" size="0.1"/></body></worldbody></mujoco>"""
    path = write(tmp_path, xml)
    m = pbsim.load(path)
    assert any("hfield 'flat' is flat" in n for n in m.notes)
    mj = mujoco.MjModel.from_xml_path(path)
    d = mujoco.MjData(mj)
    mujoco.mj_forward(mj, d)
    sc = make_scene(m)
    env = [e for e in sc.environment if isinstance(e, HeightField)]
    assert len(env) == 3
    from pbsim.contact.environment import pack_environment

    pk = pack_environment(env[:2])
    gid = np.zeros(1, np.int32)
    for h, name in enumerate(("a", "b")):
        g = mujoco.mj_name2id(mj, mujoco.mjtObj.mjOBJ_GEOM, name)
        hid = mj.geom_dataid[g]
        nr, nc = mj.hfield_nrow[hid], mj.hfield_ncol[hid]
        rx, ry = mj.hfield_size[hid, :2]
        Rg, pg = d.geom_xmat[g].reshape(3, 3), d.geom_xpos[g]
        nodes = [(-rx + 2 * rx * j / (nc - 1), -ry + 2 * ry * i / (nr - 1)) for i in range(nr) for j in range(nc)]
        inner = rng.uniform(-1, 1, (60, 2)) * [rx, ry]  # inside cells: MuJoCo's two triangles a cell
        for k, (lx, ly) in enumerate(nodes + inner.tolist()):
            x = Rg @ (np.array([lx, ly, 0.0]) * (1 - 1e-7)) + pg  # just inside the rectangle
            dist = mujoco.mj_ray(mj, d, x + [0, 0, 5], np.array([0, 0, -1.0]), None, 1, 1, gid)
            z = x[2] + 5 - dist
            phi = sdf_heightfield_posed(pk["hf_meta"][h], pk["hf_geom"][h], pk["hf_data"], x[0], x[1], z)[0]
            assert abs(phi) < 1e-6, (name, k, phi)


def test_hfield_data_given_at_run_time_is_checked(tmp_path):
    path = write(tmp_path, SLIDE)
    with pytest.raises(InputError, match=r"m\.xml: hfield_data names hfield 'nope'.*\['slope', 'later'\]"):
        pbsim.load(path, hfield_data={"nope": LATER})
    with pytest.raises(InputError, match=r"hfield_data\['later'\] must be 4x3 numbers"):
        pbsim.load(path, hfield_data={"later": LATER.T})
    with pytest.raises(InputError, match="NaN or inf"):
        pbsim.load(path, hfield_data={"later": LATER * np.nan})
    m = pbsim.load(path)
    assert any("hfield 'later' is flat" in n for n in m.notes)
    a = make_scene(m, hfield_data={"later": LATER.reshape(-1)})
    b = make_scene(pbsim.load(path, hfield_data={"later": LATER}))
    ha = [e for e in a.environment if isinstance(e, HeightField)][1]
    hb = [e for e in b.environment if isinstance(e, HeightField)][1]
    assert np.array_equal(ha.heights, hb.heights) and np.array_equal(ha.R, hb.R)
    with pytest.raises(InputError, match="hfield_data names hfield 'x'"):
        make_scene(m, hfield_data={"x": LATER})


def test_world_shapes_are_listed_and_validated(tmp_path):
    path = write(tmp_path, SLIDE)
    m = pbsim.load(path)
    assert "contact shapes: 1 cylinder, 1 ellipsoid, 2 hfield ('slope' 3x4, 'later' 4x3), 4 sphere" in m.summary()
    d = m.to_dict()  # pbsim info --json
    assert d["contact_shapes"] == {"cylinder": 1, "ellipsoid": 1, "hfield": 2, "sphere": 4}
    assert d["hfields"][1] == {"geom": "hfr", "hfield": "later", "nrow": 4, "ncol": 3, "size": [0.6, 0.9, 0.5, 0.1]}
    kinds = sorted(type(e).__name__ for e in make_scene(m).environment)
    assert kinds == ["Cylinder", "Ellipsoid", "HeightField", "HeightField"]
    from pbsim.contact import ContactInputError

    with pytest.raises(ContactInputError, match="ellipsoid semi-axes must be > 0"):
        Ellipsoid((0.1, 0.0, 0.1))
    with pytest.raises(ContactInputError, match="cylinder rotation R must be a 3x3 rotation"):
        Cylinder(0.1, 0.2, R=np.eye(3) * 2)
    with pytest.raises(ContactInputError, match="hfield size needs"):
        HeightField.from_mjcf((0, 1, 1, 1), np.zeros((2, 2)))


def test_viewer_draws_ellipsoids_and_hfields(tmp_path):
    """The viewer's triangles (pbsim_viewer.shapes, no GL): an ellipsoid's vertices lie on it, an
    hfield's on its elevations at the grid nodes, placed by the geom's pose."""
    shapes = pytest.importorskip("pbsim_viewer.shapes")
    m = pbsim.load(write(tmp_path, SLIDE), hfield_data={"later": LATER})
    g = {g.name: g for g in m.geoms}
    V = shapes.primitive_mesh(g["well"]).reshape(-1, 3)
    L = (V - g["well"].p) @ g["well"].R
    assert np.allclose(((L / g["well"].size) ** 2).sum(1), 1.0, atol=1e-9)
    V = shapes.primitive_mesh(g["hfr"]).reshape(-1, 3)
    L = np.unique(np.round((V - g["hfr"].p) @ g["hfr"].R, 9), axis=0)
    assert len(L) == 12 and np.allclose(np.sort(L[:, 2]), np.sort(0.5 * LATER.reshape(-1)))


LARGE_DT = """<mujoco>
  <asset><hfield name="plateau" nrow="3" ncol="3" size="0.5 0.5 0.4 0.1"/></asset>
  <worldbody>
    <geom name="hf" type="hfield" hfield="plateau" pos="0 0 0.1" euler="0 0 25"/>
    <geom name="post" type="cylinder" size="0.1 0.2" pos="2 0 0.2"/>
    <geom name="dome" type="ellipsoid" size="0.3 0.2 0.1" pos="4 0 0"/>
    <body name="e" pos="0 0 0.6"><freejoint/><geom type="ellipsoid" size="0.1 0.08 0.05" mass="1"/></body>
    <body name="c" pos="2 0 0.6"><freejoint/><geom type="cylinder" size="0.05 0.05" mass="0.5"/></body>
    <body name="s" pos="4 0 0.4"><freejoint/><geom type="sphere" size="0.05" mass="0.3"/></body>
  </worldbody>
</mujoco>"""


@pytest.mark.parametrize("method,dt,sink", [("pbad", 0.02, 5e-3), ("pbd_nmdp", 0.02, 12e-3)])
def test_large_dt_methods_rest_on_the_new_shapes(tmp_path, method, dt, sink):
    """The position-based methods at 20 ms with the same detection: a free ellipsoid on a turned
    hfield plateau (data given at run time, 0.5 of elevation 0.4 above z = 0.1), a free cylinder on
    a world cylinder, a ball on the top of a world ellipsoid: each rests below its contact height
    by its method's static sinking with the default contact (measured: pbad 3.8, 0.7, 3.3 mm;
    pbd_nmdp, whose cubic capacity is softer, 9.6, 4.6, 9.3 mm)."""
    m = pbsim.load(write(tmp_path, LARGE_DT), hfield_data={"plateau": np.full((3, 3), 0.5)})
    tr = pbsim.rollout(m, method, dt, int(2.0 / dt), scene=make_scene(m, mu=1.0), record_every=10)
    z = tr.q[-1, [2, 9, 16]]
    rest = np.array([0.1 + 0.2 + 0.05, 0.4 + 0.05, 0.1 + 0.05])
    assert np.all(z <= rest + 1e-4) and np.all(z > rest - sink), (z, rest)
    assert np.abs(tr.v[-1]).max() < 0.05


def test_cuda_twins_of_the_new_shapes(tmp_path):
    """The CUDA twins (same source) of env_sdf over a world cylinder, ellipsoid and MJCF hfield and
    of sdf_ellipsoid equal the CPU kernels under the CUDA simulator (tests/contact/_cudasim_geoms29.py)."""
    from pathlib import Path

    from conftest import run_cudasim_twin

    diffs, out = run_cudasim_twin(Path(__file__).with_name("_cudasim_geoms29.py"), tmp_path / "cpu.npz")
    assert set(diffs) == {"env", "ell"}, out
    assert all(v < 1e-12 for v in diffs.values()), diffs
