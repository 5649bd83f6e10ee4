"""Contact between bodies (issue 28) in NMDP (``nmdp``, ``nmdp_zo``, ``pbd_nmdp``: paper 002) and the
velocity-level baselines (``ne_mdp``, ``ne_dry``).

- Derivatives: G's ``A = dG/dtheta`` (first order, both forms) and ``B = dG/dw`` against central
  differences (relative 1e-6) with body-body candidates only: two free boxes, one tilted on the
  other, and a free-rooted tree whose two ball-jointed branches touch (their lowest common ancestor
  is not the world; sphere/capsule points against a box, a sphere against a capsule: curvature);
  the zeroth-order A drops exactly the vertices' motion relative to B (f fixed in B's frame); the
  tangent basis' singular point (a lower box's points against an upper box: ``n = -up``) with the
  basis sign of the contact set.
- Stacks (MuJoCo the oracle): two and three boxes rest within 1 cm of MuJoCo's heights after 2 s
  without jitter, nmdp at 20 ms, pbd_nmdp at 20 and 50 ms.
- Friction (paper 002 B-T3 between bodies): a box on a tilted slab slides at g (sin th - mu cos th)
  at 35 deg and sticks at 15 deg; a two-finger gripper holds a box when 2 mu F > 1.5 m g and lets it
  slip when 2 mu F < 0.5 m g.
- The bounded candidate buffer: an overflow is flagged (not converged, ``extra["contact_overflow"]``,
  a warning, also from ``rollout``), never a silent truncation.
- ne_mdp / ne_dry: the two-box stack rests and a dropped box stays on top.
- The body-body kernels are compiled only into runs with body-body items (Variants).

Models are MJCF written here or in tests/contact/_body_models.py (shared with test_body_contact.py).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import pbsim
from pbsim.contact import make_scene
from pbsim.contact.nmdp import default_k
from pbsim.integrators import State, make

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "contact"))
from _body_models import BOX_MASS, gripper, gripper_lift, ramp, slide_along  # noqa: E402
from test_body_contact import STACK2, STACK3, STACK_ALIGNED, box_body, mjcf, mujoco_rest  # noqa: E402

G = 9.81


def _rel(a, b):
    return np.abs(a - b).max() / max(np.abs(b).max(), 1e-300)


def _load(tmp_path, name, xml):
    p = tmp_path / f"{name}.xml"
    p.write_text(xml)
    return pbsim.load(str(p))


def _boxes(tmp_path):
    """Two free boxes, the upper one tilted and turned, 1.7 mm into the lower one (no floor)."""
    bodies = [
        box_body("lo", (0, 0, 0.1), (0.1, 0.1, 0.1), 1.0, euler="3 -2 5"),
        box_body("up", (0.02, -0.01, 0.298), (0.08, 0.07, 0.09), 0.7, euler="4 6 20"),
    ]
    m = pbsim.load(mjcf(tmp_path, "boxes", bodies, floor=False))
    return m, make_scene(m, ground=None, mu=0.6)


def _tree(tmp_path):
    """A free-rooted torso with two ball-jointed arms that touch each other (their lowest common
    ancestor is the torso): a sphere and a capsule on one, a box and a capsule on the other."""
    xml = (
        '<mujoco><worldbody><body name="torso" pos="0 0 1"><freejoint/>'
        '<geom type="box" size="0.03 0.03 0.03" mass="2"/>'
        '<body name="armL" pos="0 0.1 0"><joint type="ball"/>'
        '<geom name="sph" type="sphere" pos="0.2 -0.1 0.09" size="0.05" mass="0.3"/>'
        '<geom name="stick" type="capsule" fromto="0 0 0 0.2 -0.1 0.07" size="0.012" mass="0.1"/></body>'
        '<body name="armR" pos="0 -0.1 0"><joint type="ball"/>'
        '<geom name="bx" type="box" pos="0.2 0.1 0" size="0.05 0.05 0.05" mass="0.4"/>'
        '<geom name="rod" type="capsule" fromto="0 0 0 0.2 0.1 0.06" size="0.02" mass="0.1"/></body>'
        "</body></worldbody></mujoco>"
    )
    m = _load(tmp_path, "tree", xml)
    return m, make_scene(m, ground=None, mu=0.7)


def _aligned(tmp_path):
    """Two axis-aligned free boxes, the upper one 1 mm into the lower one: the lower box's points
    meet the upper box's underside, whose normal is exactly -up (the tangent basis' singular point)."""
    bodies = [box_body("lo", (0, 0, 0.1), (0.1, 0.1, 0.1), 1.0), box_body("up", (0, 0, 0.299), (0.1, 0.1, 0.1), 1.0)]
    m = pbsim.load(mjcf(tmp_path, "aligned", bodies, floor=False))
    return m, make_scene(m, ground=None, mu=0.5)


CASES = {"boxes": _boxes, "tree": _tree, "aligned": _aligned}


def _state(integ, seed=7, dt=0.02):
    """(q0, v0, theta, w, candidates): a random start, theta = q0 (+) dt v0 (+) a twist, random
    weights on the step's candidates (all body-body here)."""
    m = integ.model
    rng = np.random.default_rng(seed)
    q0 = m.default_configuration()
    v0 = 0.3 * rng.standard_normal(m.nv)
    cand = integ.candidates(q0, v0, dt)
    th = pbsim.integrate(m, q0, dt * v0 + 1e-3 * rng.standard_normal(m.nv))
    w = rng.uniform(0.0, 1.0, (len(cand), integ.vx))
    w /= w.sum(axis=1, keepdims=True) * 1.3
    return q0, v0, th, w.ravel(), cand


def _fd_A(integ, q0, v0, th, w, dt, eps=1e-6):
    m = integ.model
    A = np.zeros((m.nv, m.nv))
    for j in range(m.nv):
        e = np.zeros(m.nv)
        e[j] = eps
        rp = integ.residual(q0, v0, pbsim.integrate(m, th, e), w, dt, deriv=False)[0]
        rm = integ.residual(q0, v0, pbsim.integrate(m, th, -e), w, dt, deriv=False)[0]
        A[:, j] = (rp - rm) / (2 * eps)
    return A


@pytest.mark.parametrize("method", ["nmdp", "pbd_nmdp"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_first_order_A_and_B_with_body_body_candidates_match_central_differences(tmp_path, method, case):
    """A = dG/dtheta (Eq. 7 through the relative Jacobian: the columns' brackets on each side, the
    point and its normal moving with A and B, the vertices' depth and normal derivatives) and B = dG/dw
    against central differences, every candidate a body-body point (the candidate index space:
    ``s.npts + k``), some of them in contact."""
    m, sc = CASES[case](tmp_path)
    ks = sc.kernel_arrays(m)
    integ = make(method, m, sc)
    dt = 0.02
    q0, v0, th, w, cand = _state(integ, dt=dt)
    assert len(cand) > 0 and (cand >= ks.npts).all()
    Gv, A, B, _K, _g, _M = integ.residual(q0, v0, th, w, dt)
    x, kc, wk, ks2, q0c, v0c, nc = integ._prepared(q0, v0, dt, None)
    integ.evaluate(ks2, kc, wk, x, q0c, v0c, th.copy(), dt, _padded(w, x), nc, True, True)
    assert (x.cap[0, : len(cand)] > 10 * integ.zeta).sum() >= 2  # the cubic capacity is live
    if case == "aligned":
        assert (x.csig[0, : len(cand)] < 0).sum() >= 4  # the lower box's points: n = -up, basis from -n
    Afd = _fd_A(integ, q0, v0, th, w, dt)
    assert _rel(A, Afd) <= 1e-6, _rel(A, Afd)
    Bfd = np.zeros_like(B)
    for r in range(B.shape[1]):  # G is affine in w
        e = np.zeros(B.shape[1])
        e[r] = 1.0
        Bfd[:, r] = integ.residual(q0, v0, th, w + e, dt, deriv=False)[0] - Gv
    assert _rel(B, Bfd) <= 1e-9


def _padded(w, x):
    out = np.zeros(x.wts.shape[1])
    out[: len(w)] = w
    return out


@pytest.mark.parametrize("case", ["boxes", "tree"])
def test_zeroth_order_A_drops_exactly_the_vertices_motion_relative_to_B(tmp_path, case):
    """nmdp_zo's A keeps f fixed in B's frame (its rotation with B; the world case: f fixed): A_FO -
    A_ZO = -sum_x J_rel(a_x)^T R_B d(R_B^T f_x)/dtheta, with the derivative of the body-frame force
    taken by central differences."""
    from pbsim.dynamics.kinematics import fk_state

    m, sc = CASES[case](tmp_path)
    ks = sc.kernel_arrays(m)
    fo, zo = make("nmdp", m, sc), make("nmdp_zo", m, sc)
    dt = 0.02
    q0, v0, th, w, cand = _state(fo, dt=dt)
    A1 = fo.residual(q0, v0, th, w, dt)[1]
    A0 = zo.residual(q0, v0, th, w, dt)[1]
    assert np.array_equal(A0, fo.residual(q0, v0, th, w, dt, first=False)[1])
    x, kc, wk, _ks, q0c, v0c, nc = fo._prepared(q0, v0, dt, None)
    wv = _padded(w, x)
    V = fo.vx

    def forces(t):
        """Per candidate: f in B's frame, R_B, a, the bodies and lca (theta t)."""
        t = np.ascontiguousarray(t, float).copy()
        fo.evaluate(ks, kc, wk, x, q0c, v0c, t, dt, wv, nc, False, True)
        fk_state(m.k, wk, 0, t)
        out = []
        for ci in range(nc):
            k = int(cand[ci] - ks.npts)
            it = ks.pp_item[k]
            A, B = int(ks.it_a[it]), int(ks.it_b[it])
            f = wv[ci * V : (ci + 1) * V] @ x.Vt[0, ci]
            RB = wk.Rw[0, B].copy()
            out.append((RB.T @ f, RB, A, B))
        return out

    eps = 1e-6
    want = np.zeros_like(A1)
    base = forces(th)
    from pbsim.contact.nmdp import nmdp_pair_point

    T = np.zeros((3, 3))
    for ci in range(nc):
        fk_state(m.k, wk, 0, np.ascontiguousarray(th, float))  # the application point a = c - r n at theta
        k = int(cand[ci] - ks.npts)
        fB, RB, A, B = base[ci]
        Vt, Dv = np.zeros((V, 3)), np.zeros((V, 3, 3))
        cx, cy, cz, _sd, nx, ny, nz, _c, _d = nmdp_pair_point(
            ks, x.F, x.k, x.zeta, V, k, int(x.cface[0, ci]), float(x.csig[0, ci]), x.cpl[0, ci], wk.Rw[0, A],
            wk.pw[0, A], wk.Rw[0, B], wk.pw[0, B], Vt, Dv, T.copy(), T.copy(), T.copy())  # fmt: skip
        a = np.array([cx, cy, cz]) - ks.pp_radius[k] * np.array([nx, ny, nz])
        JA = pbsim.point_jacobian(m, th, A, wk.Rw[0, A].T @ (a - wk.pw[0, A]))[3:]
        JB = pbsim.point_jacobian(m, th, B, wk.Rw[0, B].T @ (a - wk.pw[0, B]))[3:]
        dfB = np.zeros((3, m.nv))
        for j in range(m.nv):
            e = np.zeros(m.nv)
            e[j] = eps
            dfB[:, j] = (forces(pbsim.integrate(m, th, e))[ci][0] - forces(pbsim.integrate(m, th, -e))[ci][0]) / (
                2 * eps
            )
        want -= (JA - JB).T @ (RB @ dfB)
    assert _rel(A1 - A0, want) <= 1e-6, _rel(A1 - A0, want)
    assert np.abs(want).max() > 1e-2 * np.abs(A1).max()  # the dropped part is not negligible here


@pytest.mark.parametrize("method", ["nmdp_zo", "pbd_nmdp_zo"])
def test_zeroth_order_A_is_the_exact_A_less_its_kept_part(tmp_path, method):
    """An exact-A evaluation of a zeroth-order form (its Newton projection, ``x.zo == 2``) keeps the
    first-order-only part of A's contact term in ``x.Ad``; the projection hands the QP ``A - Ad``
    instead of evaluating again (pbsim.integrators.pgm.project): that is Eq. 10's A evaluated
    directly, body-body candidates here (test_nmdp.py: scene points)."""
    m, sc = CASES["boxes"](tmp_path)
    zo = make(method, m, sc)
    dt = 0.02
    q0, v0, th, w, cand = _state(zo, dt=dt)
    x, kc, wk, ks, q0c, v0c, nc = zo._prepared(q0, v0, dt, None)
    wv = _padded(w, x)
    zo.evaluate(ks, kc, wk, x, q0c, v0c, th.copy(), dt, wv, nc, True, True)
    A1, Ad = x.A[0].copy(), x.Ad[0].copy()
    zo.evaluate(ks, kc, wk, x, q0c, v0c, th.copy(), dt, wv, nc, True, False)
    A0 = x.A[0].copy()
    assert np.abs(Ad).max() > 1e-2 * np.abs(A1).max()  # the part is not negligible here
    assert np.abs(A1 - Ad - A0).max() <= 1e-12 * np.abs(A1).max()


def test_pair_basis_sign_keeps_the_vertices_smooth_at_n_minus_up(tmp_path):
    """At n = -up the smooth basis of n (nmdp_basis) is singular: an upper box's underside turned by
    1e-5 rad swings its first tangent by 180 deg (about y) or 90 deg (about x).  The basis of sigma n
    (sigma = sign(n . up) of the contact set: pair_basis) turns by about 1e-5."""
    from pbsim.contact.nmdp import nmdp_basis, pair_basis, tangent_frame

    m, _sc = _aligned(tmp_path)
    F = tangent_frame(m)
    ref = np.array(pair_basis(F, -1.0, 0.0, 0.0, -1.0))
    ns = [np.array([np.sin(t), 0.0, -np.cos(t)]) for t in (1e-5, -1e-5)]
    ns += [np.array([0.0, np.sin(t), -np.cos(t)]) for t in (1e-5, -1e-5)]
    for n in ns:
        assert np.abs(np.array(pair_basis(F, -1.0, *n)) - ref).max() < 3e-5
    plain = np.array([nmdp_basis(F, *n) for n in ns])
    assert np.abs(plain[:, None] - plain[None]).max() > 1.9  # a tangent reversed between two of them


# ------------------------------------------------------------------------------------------- stacks
K_STACK = 4.0  # NMDP's k, times its default (module note in the test below)
STACK_RUNS = [("nmdp", 0.02), ("pbd_nmdp", 0.02), ("pbd_nmdp", 0.05), ("nmdp", 0.05)]
STACKS = {"two": STACK2, "three": STACK3, "aligned": STACK_ALIGNED}


@pytest.mark.parametrize("integ,dt", STACK_RUNS)
@pytest.mark.parametrize("stack", sorted(STACKS))
def test_box_stacks_rest_at_mujocos_heights(tmp_path, integ, dt, stack):
    """Two and three boxes (each centred on the one below, turned 20-30 deg; and two equal boxes
    aligned, whose edges lie on each other's side planes) rest within 1 cm of MuJoCo's heights after
    2 s, z peak-to-peak over the last 0.5 s below 1 mm, every step converged.  NMDP's contact has no
    restoring force beyond the capacity: a box rests where its points' cubic capacities carry it
    (``k d^3`` summed = the load); at the default ``k = M g / (4 delta_ref^3)`` that is 3-5 mm per
    interface (4.5, 3.4, 2.7 mm measured) and the three-box stack's top sits 10.3 mm low, hence
    ``k`` 4x the default here (0.63x the depth: 6.2 mm at 20 ms).  nmdp at 50 ms rests as well
    (measured: two 4.4, three 5.4, aligned 4.4 mm low; 0.1-0.3 s wall for the 2 s)."""
    bodies = STACKS[stack]
    path = mjcf(tmp_path, stack, bodies)
    m = pbsim.load(path)
    sc = make_scene(m)
    assert sc.kernel_arrays(m).nitem > 0
    T = 2.0
    tr = pbsim.rollout(m, integ, dt=dt, steps=int(round(T / dt)), q0=m.default_configuration(), scene=sc,
                       k=K_STACK * default_k(m, sc.delta_ref))  # fmt: skip
    nbox = len(bodies)
    z = tr.q[:, [7 * i + 2 for i in range(nbox)]]
    ref = mujoco_rest(path, T)[[7 * i + 2 for i in range(nbox)]]
    assert np.all(np.abs(z[-1] - ref) < 0.01), (z[-1], ref)
    last = z[int(round(1.5 / dt)) :]
    assert np.ptp(last, axis=0).max() < 1e-3, np.ptp(last, axis=0)
    assert tr.info["unconverged_steps"] == 0
    assert tr.info["max_penetration"] < 0.02


# ----------------------------------------------------------------------------------------- friction
@pytest.mark.parametrize("deg", [35.0, 15.0])
def test_nmdp_box_on_a_tilted_box_slides_and_sticks_as_coulomb_says(tmp_path, deg):
    """A 0.5 kg box on a slab tilted by deg (a geom of a heavy free body on the floor; mu = 0.5,
    tan^-1 mu = 26.6 deg), nmdp at 20 ms: at 35 deg it accelerates at g (sin th - mu cos th) = 1.61
    m/s^2 within 10 % (measured 0.4 %), at 15 deg it sticks (< 1 mm/s after 1 s; measured 1e-9).
    At 50 ms (not tested) the box tumbles down the slope: NMDP's defaults scale k, hence zeta = 1e-3 k
    delta_ref^3, by the model's total mass (50.5 kg here), so every candidate of the 0.5 kg box
    pushes with zeta = 0.12 N (37 % of its points' load) even out of contact; with zeta = 1e-4 N it
    slides at 50 ms too (a cube on a plane, the cube's own mass: 1.609 m/s^2 at 50 ms)."""
    path, _n, down = ramp(tmp_path, deg, mu=0.5)
    m = pbsim.load(path)
    dt = 0.02
    T = 1.0 if deg > 26.6 else 1.5
    tr = pbsim.rollout(m, "nmdp", dt=dt, steps=int(round(T / dt)), q0=m.default_configuration(),
                       scene=make_scene(m, mu=0.5))  # fmt: skip
    assert tr.info["unconverged_steps"] == 0
    s = slide_along(tr, down)
    t = dt * np.arange(len(s))
    th = np.radians(deg)
    if deg > 26.6:
        sel = t >= 0.2 - 1e-9
        a = 2.0 * np.polyfit(t[sel], s[sel], 2)[0]
        want = G * (np.sin(th) - 0.5 * np.cos(th))
        assert abs(a - want) <= 0.1 * want, (a, want)
    else:
        i0 = int(round(1.0 / dt))
        assert np.abs(np.diff(s[i0:])).max() / dt < 1e-3, np.abs(np.diff(s[i0:])).max() / dt


GRIP = [("nmdp", 3.0, True), ("nmdp", 0.3, False), ("pbd_nmdp", 3.0, True), ("pbd_nmdp", 0.3, False)]


@pytest.mark.parametrize("method,ratio,holds", GRIP)
def test_gripper_holds_and_slips_by_coulombs_bound(tmp_path, method, ratio, holds):
    """The two-finger gripper (_body_models.gripper: each finger PD-squeezed with F, the base lifted
    0.1 m; mu = 0.5) at 20 ms: with 2 mu F = 3 m g (> 1.5 m g) the box rises with the base (slip <
    5 mm; measured 0), with 2 mu F = 0.3 m g (< 0.5 m g) it stays on the floor.  The gripper's PD is
    explicit (its forces enter the step as forces): a stable PD (implicit stiffness) lift makes the
    maximal-dissipation principle with the paper's K (Eq. 6 / 12: the bodies' kinetic energy) let
    the box slip at any F (nmdp's ``metric="step"`` holds it: the kinetic energy in the step's metric)."""
    m = pbsim.load(gripper(tmp_path, mu=0.5))
    sc = make_scene(m, mu=0.5)
    F = ratio * BOX_MASS * G / (2 * 0.5)
    base, box, slip, tr = gripper_lift(m, method, 0.02, F, T=1.0, scene=sc)
    assert tr.info["unconverged_steps"] == 0
    assert base > 0.099
    if holds:
        assert slip < 0.005, (base, box)
    else:
        assert box < 0.005, (base, box)


# ---------------------------------------------------------------------------------------- overflow
@pytest.mark.parametrize("method,dt", [("nmdp", 0.02), ("pbd_nmdp", 0.02), ("ne_mdp", 0.005), ("ne_dry", 0.005)])
def test_candidate_overflow_is_flagged_never_silent(tmp_path, method, dt):
    """A two-box stack whose contact sets hold 4 body-body candidates (``max_contacts=4``; ~24 touch):
    the step keeps the deepest, reports how many it dropped (``extra["contact_overflow"]``), is not
    converged and warns; ``rollout`` warns too and counts the steps unconverged."""
    path = mjcf(tmp_path, "two", STACK2)
    m = pbsim.load(path)
    sc = make_scene(m)
    integ = make(method, m, sc, max_contacts=4)
    x = integ.scratch(1)[3]
    assert x.act.shape[1] == sc.kernel_arrays(m).npts + 4  # the buffer: bounded by max_contacts
    q0 = m.default_configuration()
    q0[9] = 0.2995  # the upper box 0.5 mm into the lower one
    s = State.make(m, q0)
    with pytest.warns(RuntimeWarning, match="max_contacts = 4"):
        s, d = integ.step(s, None, dt)
    assert d.extra["contact_overflow"][0] > 0 and not d.converged[0]
    with pytest.warns(RuntimeWarning, match="overflowed max_contacts"):
        tr = pbsim.rollout(m, method, dt=dt, steps=3, q0=q0, scene=sc, max_contacts=4)
    assert tr.info["unconverged_steps"] == 3
    # with room for them all: no overflow
    d = make(method, m, sc).step(State.make(m, q0), None, dt)[1]
    assert d.extra["contact_overflow"][0] == 0


# ------------------------------------------------------------------------------- velocity level
@pytest.mark.parametrize("method", ["ne_mdp", "ne_dry"])
def test_velocity_level_two_box_stack_rests(tmp_path, method):
    """ne_mdp / ne_dry at 5 ms (their stable step): the two-box stack rests (z peak-to-peak over the
    last 0.5 s < 0.1 mm) on MuJoCo's heights within 1.5 cm (ne_dry: 0.3 mm measured; ne_mdp, forward
    with the cubic capacity at q: 6.7 / 13 mm low)."""
    path = mjcf(tmp_path, "two", STACK2)
    m = pbsim.load(path)
    dt, T = 0.005, 2.0
    tr = pbsim.rollout(m, method, dt=dt, steps=int(round(T / dt)), q0=m.default_configuration(), scene=make_scene(m))
    assert tr.info["unconverged_steps"] == 0
    z = tr.q[:, [2, 9]]
    ref = mujoco_rest(path, T)[[2, 9]]
    assert np.all(np.abs(z[-1] - ref) < 0.015), (z[-1], ref)
    assert np.ptp(z[int(round(1.5 / dt)) :], axis=0).max() < 1e-4
    assert z[-1, 1] - z[-1, 0] > 0.2 - 0.01


@pytest.mark.parametrize("method,dt", [("ne_mdp", 0.005), ("ne_dry", 0.005), ("nmdp", 0.05), ("pbd_nmdp", 0.05)])
def test_box_dropped_onto_a_box_stays_on_top(tmp_path, method, dt):
    """A box dropped 0.5 m onto another (3.1 m/s at impact) stays on top: never inside it by more
    than 2.5 cm (measured: ne_dry 0, ne_mdp 2 cm at 5 ms, nmdp / pbd_nmdp 5 mm at 50 ms)."""
    bodies = [box_body("b1", (0, 0, 0.1), (0.1, 0.1, 0.1), 1.0), box_body("b2", (0, 0, 0.8), (0.1, 0.1, 0.1), 1.0)]
    m = pbsim.load(mjcf(tmp_path, "drop", bodies))
    tr = pbsim.rollout(m, method, dt=dt, steps=int(round(0.8 / dt)), q0=m.default_configuration(), scene=make_scene(m))
    gap = tr.q[:, 9] - tr.q[:, 2]
    assert gap.min() > 0.2 - 0.025, gap.min()
    assert abs(tr.q[-1, 9] - 0.3) < 0.035, tr.q[-1, 9]


# ----------------------------------------------------------------------------------------- variants
@pytest.mark.parametrize("method", ["nmdp", "pbd_nmdp", "ne_mdp", "ne_dry"])
def test_body_body_kernels_compile_only_into_runs_with_items(tmp_path, method):
    """``StepSpec.features``: a scene without body-body items runs a build whose kernel tree calls a
    stand-in for the body-body candidates and rows (world-only runs keep their compile time and
    their numbers: the same state hashes as before, docs in the report), a scene with items the full
    build."""
    from pbsim.integrators.base import step_spec
    from pbsim.integrators.driver import driver, step_batch

    spec = step_spec(method)
    m = pbsim.load(mjcf(tmp_path, "two", STACK2))
    integ = make(method, m, make_scene(m))
    # (the PGM's other features, e.g. "equality", are decided by the model: not this test's subject)
    assert spec.used(integ, None, make_scene(m).kernel_arrays(m))["body_contact"] is True
    assert spec.used(integ, None, make_scene(m, body_contact=False).kernel_arrays(m))["body_contact"] is False
    assert spec.used(integ, None, make_scene(m).kernel_arrays(m)).get("equality", False) is False  # none here
    full = driver(step_batch, spec.step, spec.features, {"body_contact": True}, reuse=False)  # the exact builds
    lean = driver(step_batch, spec.step, spec.features, {"body_contact": False}, reuse=False)
    assert lean is not full
    names = set(spec.features["body_contact"])

    def reached(top):
        """(name, implementation) of the feature's kernels that ``top``'s kernel tree calls."""
        seen, done, todo = set(), set(), [top]
        while todo:
            f = todo.pop()
            if id(f) in done or not hasattr(f, "py_func"):
                continue
            done.add(id(f))
            g = f.py_func.__globals__
            for nm in f.py_func.__code__.co_names:
                obj = g.get(nm)
                if nm in names:
                    seen.add((nm, obj.py_func.__name__))
                elif hasattr(obj, "py_func"):
                    todo.append(obj)
        return seen

    lean_seen, full_seen = reached(lean.rows), reached(full.rows)
    assert {nm for nm, _ in lean_seen} == names == {nm for nm, _ in full_seen}, (lean_seen, full_seen)
    stubs = ("unused", "no_pairs", "no_pair_candidates", "no_pair_direction")
    assert all(impl in stubs for _, impl in lean_seen), lean_seen
    assert all(nm == impl for nm, impl in full_seen), full_seen


# ------------------------------------------------------------------------------------- CUDA twin
@pytest.mark.parametrize("method", ["nmdp", "pbd_nmdp", "ne_mdp", "ne_dry"])
def test_body_contact_steps_on_cuda_backend_cudasim(tmp_path, method):
    """The step kernels with body-body candidates through the CUDA backend (CudaBatch, their
    cuda_twin; numba's CUDA simulator in a subprocess) equal the CPU integrator's step of a yawed,
    moving box pressed onto another (_cudasim_body_nmdp.py), iterations included."""
    from conftest import run_cudasim_twin

    script = Path(__file__).with_name("_cudasim_body_nmdp.py")
    diffs, out = run_cudasim_twin(script, tmp_path / f"{method}_cpu.npz", cpu_args=(method,), argv=(method,))
    assert set(diffs) == {"q", "v", "e"}, out
    assert max(diffs.values()) <= 1e-10, diffs
    assert "ITER same" in out, out
