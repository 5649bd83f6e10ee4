"""Contact and drag points in high-order PBAD (paper 000 Eq. 6 with Sec. 6.2's forces, Eq. 9).

The collocation residual gets, at every unknown node u, the point forces as generalized forces
``J_x(q_u)^T F`` with the point's velocity at u from its Cartesian collocation polynomial
``v_u = sum_j C1[u, j] x(q_j) / dt`` (pbsim.integrators.pbad.colloc).  Contact: order 2's Eq. 9
force with ``x - x_k`` replaced by ``v_u dt`` (pbsim.contact.energy.contact_force_velocity) plus
the scene's normal damping (``contact_damping``, default on).  Checked here: the force kernel
against order 2's contact energy, the residual's Jacobian against central differences (exact up to
the environment's curvature, which these flat faces do not have), and boxes dropped on a plane and
on a static Box at dt = 0.01 and 0.05 against ``pbad``: rest height, sinking, steps without the
order-2 fallback, and energy.
"""

import numpy as np
import pytest

import pbsim
import pbsim_models
from pbsim.contact import Box, contact_query
from pbsim.integrators import State, make
from pbsim.model import LinkSpec, ModelBuilder
from pbsim.model.geometry import Geometry

from pbad_fd import colloc_fd_jacobian


def box_model(half=(0.1, 0.1, 0.1), mass=1.0):
    """A free box, half extents 0.1 m, 1 kg; contact points: 8 corners + 12 edge midpoints."""
    b = ModelBuilder("box")
    hx, hy, hz = half
    inertia = mass / 3 * np.diag([hy * hy + hz * hz, hx * hx + hz * hz, hx * hx + hy * hy])
    link = LinkSpec("box", mass, np.zeros(3), inertia)
    link.geoms.append(Geometry("box_c", "box", -1, np.eye(3), np.zeros(3), np.array(half), "collision"))
    b.add_link(link)
    return b.build(floating_base=True)


def _scene(m, env):
    """Plane z = 0 (box at rest on it: z = 0.1 - depth) or a static Box with its top at z = 0.2."""
    if env == "plane":
        return pbsim.make_scene(m, ground="plane", mu=0.5), 0.1
    table = Box([0.6, 0.6, 0.1], np.eye(3), [0.0, 0.0, 0.1])
    return pbsim.make_scene(m, ground=None, environment=[table], mu=0.5), 0.3


# ---------------------------------------------------------------------------------------------
# the force kernel


def test_force_velocity_kernel_is_order2_force_and_its_derivatives():
    """contact_force_velocity with v = (x - x_k) / dt and no damper is contact_energy's dE/dx on a
    plane; its K = wx dF/dx + wv dF/dv equals central differences of F in x and in v (sliding,
    with and without the normal damper c), and the damper is clamped: a point leaving fast gets no
    pulling force."""
    from pbsim.contact import ContactPoints, Plane, Scene
    from pbsim.contact.energy import contact_energy, contact_force_velocity

    m = box_model()
    pts = ContactPoints(np.zeros(1, np.int32), np.zeros((1, 3)), np.zeros(1))
    ks = Scene(environment=[Plane(np.array([0.0, 0.0, 1.0]), 0.0)], points=pts).kernel_arrays(m)
    I3 = np.eye(3)
    D1, D2, dt = 300.0, 2000.0, 0.02
    x = np.array([0.1, -0.2, -0.004])
    v = np.array([0.4, -0.3, -0.2])

    def force(x, v, c, wx=0.0, wv=0.0, ev=0.0):
        F, K = np.zeros(3), np.zeros((3, 3))
        d = contact_force_velocity(
            ks, 0, D1, D2, c, ev, I3, np.ascontiguousarray(x), v[0], v[1], v[2], dt, wx, wv, F, K
        )
        return d, F, K

    F2, K2 = np.zeros(3), np.zeros((3, 3))
    contact_energy(ks, 0, D1, D2, 0.0, I3, x, I3, np.ascontiguousarray(x - v * dt), dt, F2, K2)
    d, F, _ = force(x, v, 0.0)
    assert np.isclose(d, 0.004) and np.allclose(F, F2, rtol=1e-13, atol=0)
    h = 1e-7
    for c in (0.0, 15.0):
        Kx = force(x, v, c, 1.0, 0.0)[2]
        Kv = force(x, v, c, 0.0, 1.0)[2]
        for a in range(3):
            e = np.eye(3)[a] * h
            fx = (force(x + e, v, c)[1] - force(x - e, v, c)[1]) / (2 * h)
            fv = (force(x, v + e, c)[1] - force(x, v - e, c)[1]) / (2 * h)
            assert np.allclose(Kx[:, a], fx, rtol=1e-7, atol=1e-6 * np.abs(Kx).max()), (c, a)
            assert np.allclose(Kv[:, a], fv, rtol=1e-7, atol=1e-6 * np.abs(Kv).max()), (c, a)
    # leaving at 2 m/s: 2 D1 d = 2.4 N < c v_n = 30 N -> no normal force (as pbsim.contact.penalty),
    # nothing along the normal in K (the tangential damping's (2 D2 d^2 / dt) P stays)
    d, F, K = force(x, np.array([0.0, 0.0, 2.0]), 15.0, 1.0, 1.0)
    assert d > 0 and np.allclose(F, 0.0) and np.allclose(K[2], 0.0) and np.allclose(K[:, 2], 0.0)
    assert np.allclose(K[:2, :2], 2 * D2 * d * d / dt * np.eye(2))
    assert force(np.array([0.0, 0.0, 0.01]), v, 15.0, 1.0, 1.0)[0] == 0.0  # out of contact: nothing
    # friction="coulomb" (ev > 0): F = -f_n n + mu f_n f1(|u|) u / |u| with the node's own f_n; K against
    # central differences, sliding faster and slower than ev
    mu = D2 * 0.1 / D1
    for ev, vt in ((0.1, v), (1.0, v), (0.1, np.array([0.0, 0.0, -0.2]))):
        for c in (0.0, 15.0):
            d, F, _ = force(x, vt, c, ev=ev)
            fn = 2 * D1 * d - c * vt[2]
            y = np.linalg.norm(vt[:2])
            f1 = 1.0 if y >= ev else 2 * y / ev - y * y / ev**2
            assert np.isclose(F[2], -fn) and np.allclose(F[:2], mu * fn * f1 * vt[:2] / max(y, 1e-300))
            Kx = force(x, vt, c, 1.0, 0.0, ev)[2]
            Kv = force(x, vt, c, 0.0, 1.0, ev)[2]
            for a in range(3):
                e = np.eye(3)[a] * h
                fx = (force(x + e, vt, c, ev=ev)[1] - force(x - e, vt, c, ev=ev)[1]) / (2 * h)
                fv = (force(x, vt + e, c, ev=ev)[1] - force(x, vt - e, c, ev=ev)[1]) / (2 * h)
                assert np.allclose(Kx[:, a], fx, rtol=1e-6, atol=1e-6 * np.abs(Kx).max()), (ev, c, a)
                assert np.allclose(Kv[:, a], fv, rtol=1e-6, atol=1e-6 * np.abs(Kv).max()), (ev, c, a)


# ---------------------------------------------------------------------------------------------
# the residual's Jacobian


@pytest.mark.parametrize("env", ["plane", "box"])
@pytest.mark.parametrize("name", ["pbad3", "pbad4"])
def test_residual_jacobian_with_contact_fd(name, env):
    """Nodes of a tilted box sliding into a plane / the top of a static Box (8 corners and edge
    points in contact at every node, depths 2-7 mm, sliding at ~0.5 m/s: the spring, Eq. 9's
    friction and the normal damper all act).  Every term is differentiated exactly (the normal is
    constant on a flat face; the damper's clamp is not active here): |J - J_fd| <= 1e-6 |J_fd|
    (measured ~1e-10).  The contact part of J is a sizeable part of J."""
    m = box_model()
    scene, ztop = _scene(m, env)
    integ = make(name, m, scene)
    rng = np.random.default_rng(0)
    dt = 0.02
    q = m.neutral()
    q[2] = ztop - 0.003
    v = np.array([0.3, -0.2, -0.1, 0.5, 0.2, -0.4])
    nodes = np.array(
        [pbsim.integrate(m, q, integ.tau[j] * dt * v + 0.002 * rng.normal(size=6)) for j in range(integ.order + 1)]
    )[None]
    for j in range(2, integ.order + 1):
        assert (contact_query(m, scene, nodes[:, j])["d"][0] > 1e-3).sum() >= 4
    r, J = integ.residual(nodes, dt)
    Jf = colloc_fd_jacobian(m, integ, nodes, dt)
    assert np.abs(J[0] - Jf).max() < 1e-6 * np.abs(Jf).max(), np.abs(J[0] - Jf).max() / np.abs(Jf).max()
    _, J0 = make(name, m).residual(nodes, dt)  # without contact
    assert np.abs(J[0] - J0[0]).max() > 0.1 * np.abs(Jf).max()


def _swimmer_drag(model):
    """The swimmer of scripts/examples/demo_swimmer.py: 4 drag points per link along its axis."""
    pb, pl = [], []
    for i in range(model.nb):
        for s in (0.125, 0.375, 0.625, 0.875):
            pb.append(i)
            pl.append([s * 0.25, 0.0, 0.0])
    return dict(points_body=pb, points_local=pl, points_axis=[[1.0, 0, 0]] * len(pb), drag_n=4.0, drag_t=0.2)


@pytest.mark.parametrize("name", ["pbad3", "pbad4"])
def test_residual_jacobian_with_drag_fd(name):
    """Drag (Sec. 6.2, axis frozen at q_k as in order 2) at random swimmer nodes: the force is
    linear in the node velocity, its Jacobian exact (1e-6 relative, measured ~1e-10)."""
    model = pbsim_models.swimmer()
    integ = make(name, model, points=_swimmer_drag(model))
    rng = np.random.default_rng(1)
    dt = 0.05
    q = pbsim.integrate(model, model.neutral(), 0.3 * rng.normal(size=model.nv))
    v = rng.normal(size=model.nv)
    nodes = np.array(
        [
            pbsim.integrate(model, q, integ.tau[j] * dt * v + 0.01 * rng.normal(size=model.nv))
            for j in range(integ.order + 1)
        ]
    )[None]
    r, J = integ.residual(nodes, dt)
    Jf = colloc_fd_jacobian(model, integ, nodes, dt)
    assert np.abs(J[0] - Jf).max() < 1e-6 * np.abs(Jf).max(), np.abs(J[0] - Jf).max() / np.abs(Jf).max()
    _, J0 = make(name, model).residual(nodes, dt)
    assert np.abs(J[0] - J0[0]).max() > 1e-3 * np.abs(Jf).max()


def test_drag_swimmer_coasts_at_the_exact_rate():
    """The straight swimmer (no gravity) launched at body velocity (0.3, 1, 0), drag_n = 0.4,
    drag_t = 0.1 at 16 points on its 4 links of 1 kg: the drag is uniform along the chain, so it
    translates without turning and each component decays exactly as exp(-16 c t / 4).  pbad3 and
    pbad4 at dt = 0.01 and 0.05: every step a collocation root (no fallback), no rotation, velocity
    after 0.5 s within 1 % of |v0| of the exact one (measured 1.8e-3 / 7.6e-4 at dt = 0.01,
    8.6e-3 / 3.8e-3 at 0.05: first order in dt, from the first step's previous node, which is
    rebuilt from (q, v) and ABA without the drag; pbad 2.9e-3 at dt = 0.01)."""
    model = pbsim_models.swimmer()
    pts = dict(_swimmer_drag(model), drag_n=0.4, drag_t=0.1)
    v0 = np.zeros(model.nv)
    v0[:2] = 0.3, 1.0
    T = 0.5
    exact = np.array([0.3 * np.exp(-0.4 * T), np.exp(-1.6 * T)])
    for name in ("pbad3", "pbad4"):
        for dt in (0.01, 0.05):
            integ = make(name, model, points=pts)
            s = State.make(model, model.neutral(), v0)
            for _ in range(int(round(T / dt))):
                s, d = integ.step(s, None, dt)
                assert d.converged[0] and not d.extra["fallback"][0]
            assert np.abs(s.v[0, 2:]).max() < 1e-9
            assert np.abs(s.v[0, :2] - exact).max() < 0.01, (name, dt, s.v[0, :2] - exact)


# ---------------------------------------------------------------------------------------------
# dropped boxes


def _drop(m, scene, name, dt, q0, v0=None, T=3.0, **opts):
    """(q after every step, total energy (KE + gravity + sum k d^2 / 2) before the first and after
    every step, steps fallen back, steps converged, last state) of a passive run."""
    k = scene.point_parameters(m, scene.contact_points())[0]
    integ = make(name, m, scene, **opts)
    s = State.make(m, q0, v0)
    qs, E = [], [pbsim.energy(m, s.q[0], s.v[0]).sum() + 0.5 * (k * contact_query(m, scene, s.q)["d"][0] ** 2).sum()]
    fb = conv = 0
    for _ in range(int(round(T / dt))):
        s, d = integ.step(s, None, dt)
        qs.append(s.q[0].copy())
        E.append(d.energy[0] + 0.5 * (k * contact_query(m, scene, s.q)["d"][0] ** 2).sum())
        fb += int(d.extra.get("fallback", [False])[0])
        conv += int(d.converged[0])
    return np.array(qs), np.array(E), fb, conv, s


@pytest.mark.parametrize("env", ["plane", "box"])
def test_dropped_box_rests_like_pbad(env):
    """The box dropped flat from 5 cm onto a plane / the top of a static Box, 3 s: pbad3 and pbad4
    at dt = 0.01 and 0.05 come to rest at pbad's height (the static depth M g / (8 k) = 2.5 mm:
    measured equal to 1e-11 m; bound 1 mm), never sink more than 2 cm below the touching height
    (measured 7.0 mm at dt = 0.01, 3.7 mm at 0.05; pbad 11.6 / 5.0 mm), every step converged and
    at least 90 % without the order-2 fallback at dt = 0.01 (measured: none fall back, at dt = 0.05
    neither), and the total energy never rises from a step to the next by more than 1e-9 J
    (measured <= 3e-13 J: the fall is a quadratic the collocation polynomial represents exactly,
    the springs' damper dissipates; 1e-9 J is rounding-level against E ~ 3 J with the nodes solved
    to xtol = 1e-10).  Without the damper (contact_damping=False: Eq. 9 alone) the collocation
    keeps the spring's bounce: the box is still bouncing after 3 s at dt = 0.01."""
    m = box_model()
    scene, z_touch = _scene(m, env)
    q0 = m.neutral()
    q0[2] = z_touch + 0.05
    for dt in (0.01, 0.05):
        ref = pbsim.rollout(m, "pbad", dt=dt, steps=int(round(3.0 / dt)), q0=q0, scene=scene)
        for name in ("pbad3", "pbad4"):
            qs, E, fb, conv, s = _drop(m, scene, name, dt, q0)
            z = qs[:, 2]
            n = len(z)
            assert conv == n, (name, dt, conv)
            assert abs(z[-1] - ref.q[-1, 2]) < 1e-3, (name, dt, z[-1], ref.q[-1, 2])
            assert z.min() > z_touch - 0.02, (name, dt, z.min())
            assert np.linalg.norm(s.v) < 1e-3 and np.abs(s.q[0, :2]).max() < 1e-6
            if dt == 0.01:
                assert fb <= 0.1 * n, (name, fb)
            assert np.diff(E).max() < 1e-9, (name, dt, np.diff(E).max())
    qs, E, fb, conv, s = _drop(m, scene, "pbad3", 0.01, q0, contact_damping=False)
    z = qs[:, 2]
    assert conv == len(z) and np.linalg.norm(s.v) > 0.05 and z[-100:].max() - z[-100:].min() > 0.01


def test_spinning_drop_does_not_gain_energy():
    """A tilted box spinning at ~2.4 rad/s dropped from 30 cm onto a plane (corner impact, rolling
    and sliding: friction and springs at changing corners), 3 s.  The collocation is no energy
    minimisation, so the total energy (KE + gravity + sum k d^2 / 2) is bounded by the scheme's own
    error in flight: the same box without any scene gains up to the free-flight error e_free
    (pbad3 6.3e-6 J, pbad4 1.1e-6 J at dt = 0.01 -- the first step, whose previous node is rebuilt
    from (q, v) -- measured 0.2-3e-5 J at dt = 0.05).  With contact: at dt = 0.01 no step in
    contact raises the energy by more than 1e-9 J (measured: only the first, contact-free step
    rises at all) and at both dt the energy never exceeds E0 + e_free + 1e-6 J (at dt = 0.05
    pbad4, not A-stable, raises it by up to 2e-2 J in single impact steps, from below E0: the
    bound holds by 4 orders of magnitude).  The box comes to rest on a face (z = 0.0975).  Steps
    without fallback: all at dt = 0.01; at dt = 0.05 one of 60 for each order falls back."""
    m = box_model()
    scene, _ = _scene(m, "plane")
    q0 = pbsim.integrate(m, m.neutral(), np.array([0, 0, 0.3, 0.4, -0.3, 0.2]))
    v0 = np.array([0.5, -0.3, 0.0, 1.0, 2.0, -1.0])
    for dt in (0.01, 0.05):
        for name in ("pbad3", "pbad4"):
            free = make(name, m)
            s = State.make(m, q0, v0)
            e0 = pbsim.energy(m, q0, v0).sum()
            e_free = 0.0
            for _ in range(int(round(3.0 / dt))):
                s, d = free.step(s, None, dt)
                e_free = max(e_free, d.energy[0] - e0)
            qs, E, fb, conv, s = _drop(m, scene, name, dt, q0, v0)
            n = len(qs)
            assert conv == n
            assert E.max() - E[0] < e_free + 1e-6, (name, dt, E.max() - E[0], e_free)
            if dt == 0.01:
                assert fb == 0
                touching = (contact_query(m, scene, qs)["d"] > 0).any(axis=1)
                assert touching.sum() > n // 2
                assert np.diff(E)[touching].max() < 1e-9, (name, np.diff(E)[touching].max())
            else:
                assert fb <= 0.1 * n
            assert abs(qs[-1, 2] - 0.0975) < 1e-4 and np.linalg.norm(s.v) < 1e-2, (name, dt, qs[-1, 2], s.v)


def test_points_option_contact_equals_the_scene_plane():
    """``points=dict(contact=True, ...)`` against a plane with D1 = k / 2, D2 = mu k / (2 * 0.1) is
    the scene's contact for pbad3 too, the normal damping included (the scene's rule with k = 2 D1):
    the same residual and Jacobian; contact_damping=False drops the damper (a different residual)."""
    m = box_model()
    scene = pbsim.make_scene(m, ground="plane", mu=0.5)
    pts = scene.contact_points()
    k = float(scene.point_parameters(m, pts)[0][0])
    opt = dict(
        points_body=pts.body,
        points_local=pts.local,
        points_radius=pts.radius,
        contact=True,
        D1=0.5 * k,
        D2=0.5 * k / (2.0 * 0.1),
    )
    a = make("pbad3", m, scene)
    b = make("pbad3", m, points=opt)
    q = m.neutral()
    q[2] = 0.097
    v = np.array([0.3, -0.2, -0.1, 0.5, 0.2, -0.4])
    nodes = np.array([pbsim.integrate(m, q, t * 0.01 * v) for t in a.tau])[None]
    ra, Ja = a.residual(nodes, 0.01)
    rb, Jb = b.residual(nodes, 0.01)
    assert np.array_equal(ra, rb) and np.array_equal(Ja, Jb)
    rc, _ = make("pbad3", m, scene, contact_damping=False).residual(nodes, 0.01)
    assert np.abs(rc - ra).max() > 1.0
