"""``nmdp`` / ``nmdp_zo`` (NE-NMDP of paper 002; notes/pbfd_nmdp.md B1, B4, B5).

B-T1: A = dG/dtheta (first order) against central differences of G, <= 1e-6 relative, with B =
dG/dw and g = dK/dtheta, on a spinning box touching a tilted plane (free joint) and a ball-joint
chain touching a sphere (curved normal); the zeroth-order A differs from it by exactly
``-sum_x J_x^T (dv_x/dtheta) w_x`` (the wrench module's dv/dtheta).  B-T2: on a rollout every
accepted iterate has |G|_inf <= tol and K never rises; the final state satisfies G = 0 again when
recomputed.  B-T3: a box with mu = 0.5, V_x = 4 on an incline sticks at 20 deg and slides at g (sin
35 - 0.5 cos 35) at 35 deg, dt 5 and 50 ms (nmdp) and 5 ms (nmdp_zo).  Free fall is the backward-
Euler parabola.  CpuBatch equals Integrator.step.  The sub-step cap is flagged.  Bad inputs are
InputErrors.
"""

import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import pbsim
import pbsim_models
from conftest import batch_equals_step, pybullet_file, run_cudasim_twin
from pbsim.contact import Plane, Scene, Sphere, sample_contact_points
from pbsim.contact.nmdp import nmdp_vertices
from pbsim.errors import InputError, SimulationError
from pbsim.integrators import State, make

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts" / "figures"))
from bench_nmdp_incline import box, slide, stick  # noqa: E402

G = 9.81


def _rel(a, b):
    return np.abs(a - b).max() / max(np.abs(b).max(), 1e-300)


def _box_case():
    """A spinning, translating box with two corners in a tilted plane, weights on every vertex."""
    m = box()
    a = np.radians(15)
    n = np.array([-np.sin(a), 0.0, np.cos(a)])
    sc = Scene(environment=[Plane(n, 0.0)], points=sample_contact_points(m), mu=0.5)
    q0 = m.neutral()
    q0[:3] = [0.02, -0.01, 0.06]
    quat = np.array([0.97, 0.12, -0.18, 0.1])
    q0[3:7] = quat / np.linalg.norm(quat)
    v0 = np.array([0.3, -0.2, -0.5, 1.5, -2.0, 0.8])
    return m, sc, q0, v0


def _chain_case():
    """Three spherical (quaternion) joints hanging from the world, the tip pressed into a sphere."""
    m = pbsim_models.chain(3, joint="spherical")
    sc = Scene(environment=[Sphere([0.25, 0.0, -0.322], 0.3)], points=sample_contact_points(m), mu=0.7)
    rng = np.random.default_rng(3)
    q0 = m.neutral()
    for i in range(3):
        qq = np.array([1.0, 0.0, 0.0, 0.0]) + 0.3 * rng.standard_normal(4)
        q0[4 * i : 4 * i + 4] = qq / np.linalg.norm(qq)
    q0[0:4] = [np.cos(0.4), 0.0, np.sin(0.4), 0.0]  # the chain leans down toward the sphere
    v0 = 0.8 * rng.standard_normal(m.nv)
    return m, sc, q0, v0


def _state_in_contact(integ, q0, v0, dt):
    """theta = q0 (+) dt v0 (+) a twist, random weights on the step's candidates."""
    m = integ.model
    rng = np.random.default_rng(7)
    th = pbsim.integrate(m, q0, dt * v0 + 1e-3 * rng.standard_normal(m.nv))
    cand = integ.candidates(q0, v0, dt)
    w = rng.uniform(0.0, 1.0, (len(cand), integ.vx))
    w /= w.sum(axis=1, keepdims=True) * 1.3
    return th, w.ravel(), cand


CASES = {"box": _box_case, "chain": _chain_case}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bt1_first_order_A_B_and_grad_K_match_central_differences(case):
    m, sc, q0, v0 = CASES[case]()
    dt = 0.02
    integ = make("nmdp", m, sc)
    th, w, cand = _state_in_contact(integ, q0, v0, dt)
    pen = nmdp_vertices(m, sc, th)["sd"][cand]
    assert (pen > 0).sum() >= 1  # some candidate is in contact: the cubic term is live
    Gv, A, B, K, g, _M = integ.residual(q0, v0, th, w, dt)
    eps = 1e-6
    Afd = np.zeros_like(A)
    gfd = np.zeros(m.nv)
    for j in range(m.nv):
        e = np.zeros(m.nv)
        e[j] = eps
        rp = integ.residual(q0, v0, pbsim.integrate(m, th, e), w, dt, deriv=False)
        rm = integ.residual(q0, v0, pbsim.integrate(m, th, -e), w, dt, deriv=False)
        Afd[:, j] = (rp[0] - rm[0]) / (2 * eps)
        gfd[j] = (rp[3] - rm[3]) / (2 * eps)
    assert _rel(A, Afd) <= 1e-6, _rel(A, Afd)
    assert _rel(g, gfd) <= 1e-6, _rel(g, gfd)
    Bfd = np.zeros_like(B)
    for r in range(B.shape[1]):  # G is affine in w
        e = np.zeros(B.shape[1])
        e[r] = 1.0
        Bfd[:, r] = integ.residual(q0, v0, th, w + e, dt, deriv=False)[0] - Gv
    assert _rel(B, Bfd) <= 1e-9
    assert K > 0


@pytest.mark.parametrize("case", sorted(CASES))
def test_bt1_zeroth_order_A_drops_exactly_the_vertex_derivative(case):
    """A_FO - A_ZO = -sum_x J_a^T (sum_i w_i dv^i/dtheta) (a: the force's point, the sphere
    surface), with dv/dtheta from pbsim.contact.nmdp (itself checked against central
    differences in tests/contact/test_nmdp_wrench.py)."""
    m, sc, q0, v0 = CASES[case]()
    dt = 0.02
    fo, zo = make("nmdp", m, sc), make("nmdp_zo", m, sc)
    th, w, cand = _state_in_contact(fo, q0, v0, dt)
    A1 = fo.residual(q0, v0, th, w, dt)[1]
    A0 = zo.residual(q0, v0, th, w, dt)[1]
    assert np.array_equal(A0, fo.residual(q0, v0, th, w, dt, first=False)[1])
    wv = nmdp_vertices(m, sc, th)
    ks = sc.kernel_arrays(m)
    want = np.zeros_like(A1)
    W = w.reshape(len(cand), fo.vx)
    for ci, kp in enumerate(cand):
        body = int(ks.pt_body[kp])
        R, p = _body_pose(m, th, body)
        a = wv["x"][kp] - ks.pt_radius[kp] * wv["n"][kp]
        Ja = pbsim.point_jacobian(m, th, body, R.T @ (a - p))[3:]
        dv = np.einsum("i,ijk->jk", W[ci], wv["dV"][kp])
        want -= Ja.T @ dv
    assert _rel(A1 - A0, want) <= 1e-9
    assert np.abs(want).max() > 1e-3 * np.abs(A1).max()  # the dropped part is not negligible here


def _body_pose(m, q, body):
    from pbsim.dynamics.kinematics import fk_state
    from pbsim.dynamics.workspace import work_for

    w = work_for(m, 1)
    fk_state(m.k, w, 0, np.ascontiguousarray(q, float))
    return w.Rw[0, body].copy(), w.pw[0, body].copy()


@pytest.mark.parametrize("method", ["nmdp", "pbd_nmdp"])
def test_bt2_accepted_iterates_are_feasible_and_k_never_rises(method):
    """A tilted, spinning box dropped on a plane, 0.4 s at 10 ms: per step the largest |G|_inf of
    an accepted iterate is <= tol, no accepted iterate raised K, K at the end <= K after the
    initial projection, and the new state recomputed from outside satisfies G = 0 and its K
    (NE form: its kinetic energy; position-based form: |X - X_-|^2 / (2 h^2))."""
    m = box()
    sc = Scene(environment=[Plane([0, 0, 1.0], 0.0)], points=sample_contact_points(m), mu=0.6)
    integ = make(method, m, sc)
    q0 = m.neutral()
    q0[2] = 0.12
    quat = np.array([0.96, 0.2, -0.1, 0.05])
    q0[3:7] = quat / np.linalg.norm(quat)
    s = State.make(m, q0, np.array([0.4, 0.0, -0.5, 0.5, -1.0, 2.0]))
    dt = 0.01
    contact_steps = 0
    for _ in range(40):
        q, v = s.q[0].copy(), s.v[0].copy()
        s, d = integ.step(s, None, dt)
        assert d.converged[0] and not d.extra["alpha_cap"][0]
        assert d.extra["accepted_max_residual"][0] <= integ.gtol
        assert d.extra["accepted_k_rises"][0] == 0
        assert d.extra["k_end"][0] <= d.extra["k_start"][0] * (1 + 1e-12) + 1e-15
        if d.extra["substeps"][0] == 1:
            cand = integ.candidates(q, v, dt)
            w = integ._x.wts[0, : len(cand) * integ.vx].copy()
            contact_steps += len(cand) > 0 and w.max() > 0
            Gv, _A, _B, K, _g, _M = integ.residual(q, v, s.q[0], w, dt, deriv=False)
            assert np.abs(Gv).max() <= integ.gtol
            if method == "nmdp":
                assert np.isclose(K, pbsim.energy(m, s.q[0], s.v[0])[0], rtol=1e-9, atol=1e-12)
            assert np.isclose(K, d.extra["k_end"][0], rtol=1e-9, atol=1e-12)
    assert contact_steps >= 20


@pytest.mark.parametrize("dt", [5e-3, 50e-3])
def test_bt3_incline_20deg_sticks(dt):
    """tan 20 = 0.36 < mu = 0.5: after 0.5 s of settling the box moves < 1 cm (note: 1 mm) in 2 s."""
    r = stick("nmdp", dt)
    assert r["conv"].all()
    assert r["creep"] < 1e-3  # measured: 0.19 mm at 5 ms, 0.02 mm at 50 ms (docs/benchmarks/nmdp.md)


@pytest.mark.parametrize("method,dt", [("nmdp", 5e-3), ("nmdp", 50e-3), ("nmdp_zo", 5e-3)])
def test_bt3_incline_35deg_slides_at_g_sin_minus_mu_cos(method, dt):
    want = G * (np.sin(np.radians(35)) - 0.5 * np.cos(np.radians(35)))
    r = slide(method, dt)
    assert r["conv"].all()
    assert abs(r["acc"] - want) <= 0.1 * want  # measured: 1.6088 vs 1.6088 (docs/benchmarks/nmdp.md)


@pytest.mark.parametrize("method", ["nmdp_zo", "pbd_nmdp_zo"])
def test_zo_at_50ms_slides_and_sticks_without_sub_steps(method):
    """B-T3 at 50 ms for the zeroth-order forms, and B-T7's concern (Algorithm 2 should rarely
    halve): the chord projection's natural-monotonicity merit and its step cut to ``max_step``
    (pgm/project.py) need no sub-step here; measured with the |G|_2 merit (a failure at max_step): 10 %
    (nmdp_zo) / 23 % (pbd_nmdp_zo) of the sliding steps and 2 % of the sticking ones halved."""
    want = G * (np.sin(np.radians(35)) - 0.5 * np.cos(np.radians(35)))
    r = slide(method, 50e-3)
    assert r["conv"].all() and (r["amin"] == 1.0).all()
    assert abs(r["acc"] - want) <= 0.1 * want  # measured 1.609
    r = stick(method, 50e-3)
    assert r["conv"].all() and (r["amin"] == 1.0).all()
    assert r["creep"] < 1e-3  # measured 0.58 mm


def test_zo_sticks_at_20deg():
    r = stick("nmdp_zo", 5e-3)
    assert r["conv"].all() and r["creep"] < 1e-3


@pytest.mark.parametrize("method", ["nmdp", "nmdp_zo"])
def test_free_fall_is_the_backward_euler_parabola(method):
    """No contact in reach: theta_{k+1} = theta_k + h v_{k+1}, v_{k+1} = v_k - g h, one PGM
    iteration-free step each (no candidates): z_n = z0 + v0 t - g h^2 n (n + 1) / 2, which is the
    analytic parabola z0 + v0 t - g t^2 / 2 up to g h t / 2."""
    m = box()
    sc = Scene(environment=[Plane([0, 0, 1.0], 0.0)], points=sample_contact_points(m), mu=0.5)
    integ = make(method, m, sc)
    q0 = m.neutral()
    q0[2] = 2.0
    vz0 = 1.0
    s = State.make(m, q0, np.array([0.3, 0.0, vz0, 0.0, 0.0, 0.0]))
    h = 0.01
    n = 40
    for _ in range(n):
        s, d = integ.step(s, None, h)
        assert d.converged[0] and d.iterations[0] == 0 and d.extra["substeps"][0] == 1
    t = n * h
    z_disc = 2.0 + vz0 * t - G * h * h * n * (n + 1) / 2
    assert np.isclose(s.q[0, 2], z_disc, rtol=0, atol=1e-10)
    assert np.isclose(s.v[0, 2], vz0 - G * t, atol=1e-10)
    assert np.isclose(s.q[0, 0], 0.3 * t, atol=1e-12)
    assert abs(s.q[0, 2] - (2.0 + vz0 * t - G * t * t / 2)) <= G * h * t / 2 + 1e-10


def _box_on_incline(deg):
    """``(model, scene, q0)``: the box resting flat on a plane tilted by ``deg`` (mu 0.5)."""
    m = box()
    a = np.radians(deg)
    n = np.array([-np.sin(a), 0.0, np.cos(a)])
    sc = Scene(environment=[Plane(n, 0.0)], points=sample_contact_points(m), mu=0.5)
    q0 = m.neutral()
    q0[:3] = 0.05 * n
    q0[3:7] = [np.cos(a / 2), 0.0, -np.sin(a / 2), 0.0]
    return m, sc, q0


@pytest.mark.parametrize("method", ["nmdp_zo", "pbd_nmdp_zo"])
def test_zeroth_order_A_is_the_exact_A_less_its_kept_part(method):
    """Scene points (test_body_contact_nmdp.py: body-body): the first-order-only part of A that an
    exact-A evaluation of a zeroth-order form keeps in ``x.Ad`` is what Eq. 10 drops, so ``A - Ad``
    (what the projection hands the QP) is the zeroth-order A evaluated directly."""
    m, sc, q0 = _box_on_incline(20.0)
    zo = make(method, m, sc)
    dt = 0.02
    rng = np.random.default_rng(3)
    th = pbsim.integrate(m, q0, 1e-3 * rng.standard_normal(m.nv) - 0.004 * np.eye(m.nv)[2])  # pressed in
    x, kc, wk, ks, q0c, v0c, nc = zo._prepared(q0, np.zeros(m.nv), dt, None)
    wv = np.zeros(x.wts.shape[1])
    wv[: nc * zo.vx] = rng.uniform(0.0, 0.2, nc * zo.vx)
    zo.evaluate(ks, kc, wk, x, q0c, v0c, th.copy(), dt, wv, nc, True, True)
    A1, Ad = x.A[0].copy(), x.Ad[0].copy()
    zo.evaluate(ks, kc, wk, x, q0c, v0c, th.copy(), dt, wv, nc, True, False)
    A0 = x.A[0].copy()
    assert nc > 0 and np.abs(Ad).max() > 1e-3 * np.abs(A1).max()
    assert np.abs(A1 - Ad - A0).max() <= 1e-12 * np.abs(A1).max()


@pytest.mark.parametrize("method", ["nmdp", "pbd_nmdp_zo"])
def test_g_from_the_chain_columns_equals_the_chain_walk(method):
    """With derivatives the scene points' part of G and their rows of B^T come from one walk of the
    chain's columns (pbsim.integrators.pgm.contact.pgm_point_rows), without from
    pbsim.contact.query.point_force_jt: the same products in the same order, so G is the same to
    the last bit either way (the rows' correctness: test_bt1's central differences)."""
    m, sc, q0 = _box_on_incline(20.0)
    integ = make(method, m, sc)
    rng = np.random.default_rng(5)
    th = pbsim.integrate(m, q0, 1e-3 * rng.standard_normal(m.nv) - 0.004 * np.eye(m.nv)[2])
    x, kc, wk, ks, q0c, v0c, nc = integ._prepared(q0, np.zeros(m.nv), 0.02, None)
    wv = np.zeros(x.wts.shape[1])
    wv[: nc * integ.vx] = rng.uniform(0.0, 0.2, nc * integ.vx)
    integ.evaluate(ks, kc, wk, x, q0c, v0c, th.copy(), 0.02, wv, nc, True, True)
    G1, B1 = x.G[0].copy(), x.Bm[0, : nc * integ.vx].copy()
    integ.evaluate(ks, kc, wk, x, q0c, v0c, th.copy(), 0.02, wv, nc, False, True)
    assert nc > 0 and np.abs(B1).max() > 0.0
    assert np.array_equal(G1, x.G[0])


@pytest.mark.parametrize("method", ["nmdp", "pbd_nmdp"])
def test_cpubatch_equals_integrator_step(method):
    """CpuBatch runs the same PGM step kernel (NE or position-based hooks) bit for bit."""
    m, sc, q0 = _box_on_incline(20.0)
    Q = np.stack([q0, q0])
    Q[1, 2] += 0.02
    V = np.zeros((2, 6))
    V[1] = [0.5, 0.2, -0.3, 0.0, 0.3, 1.0]
    batch_equals_step(method, m, sc, Q, V, 15, 0.01)


@pytest.mark.parametrize("fo, zo", [("nmdp", "nmdp_zo"), ("pbd_nmdp", "pbd_nmdp_zo")])
def test_sub_step_cap_is_flagged_never_silent(fo, zo):
    """A projection tolerance no Newton step can reach: every level fails, the cap (alpha =
    2^-substep) is hit, the step is flagged (converged False, alpha_cap, warning / raise), for the
    NE and the position-based forms."""
    m = box()
    sc = Scene(environment=[Plane([0, 0, 1.0], 0.0)], points=sample_contact_points(m), mu=0.5)
    q0 = m.neutral()
    q0[2] = 0.048
    integ = make(fo, m, sc, tol=1e-30, substep=2)
    with pytest.warns(RuntimeWarning, match="sub-step cap"):
        s, d = integ.step(State.make(m, q0), None, 0.01)
    assert not d.converged[0] and d.extra["alpha_cap"][0]
    assert d.extra["min_alpha"][0] == 0.25 and d.extra["projection_failures"][0] >= 3
    assert np.isfinite(s.q).all()
    integ = make(zo, m, sc, tol=1e-30, substep=1, on_fail="raise")
    with pytest.raises(SimulationError, match="cap"):
        integ.step(State.make(m, q0), None, 0.01)
    integ = make(fo, m, sc, tol=1e-30, substep=0, on_fail="ignore")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _s, d = integ.step(State.make(m, q0), None, 0.01)
    assert d.extra["alpha_cap"][0] and d.extra["min_alpha"][0] == 1.0


@pytest.mark.parametrize(
    "opts,match",
    [
        (dict(vx=2), "vx"),
        (dict(k=-1.0), "k"),
        (dict(zeta=-1.0), "zeta"),
        (dict(eta=1.0), "eta"),
        (dict(tol=0.0), "tol"),
        (dict(xtol=-1e-6), "xtol"),
        (dict(max_iterations=0), "max_iterations"),
        (dict(substep=-1), "substep"),
        (dict(margin=-0.1), "margin"),
        (dict(on_fail="boom"), "on_fail"),
        (dict(gamma=2.0), "no option"),
    ],
)
def test_bad_options_are_input_errors(opts, match):
    m = box()
    sc = Scene(environment=[Plane([0, 0, 1.0], 0.0)], points=sample_contact_points(m), mu=0.5)
    for name in ("nmdp", "nmdp_zo"):
        with pytest.raises(InputError, match=match):
            make(name, m, sc, **opts)


def test_negative_mu_and_nan_state_are_input_errors():
    m = box()
    sc = Scene(environment=[Plane([0, 0, 1.0], 0.0)], points=sample_contact_points(m), mu=0.5)
    sc.mu = -0.2
    with pytest.raises(InputError, match="mu"):
        make("nmdp", m, sc)
    sc.mu = 0.5
    integ = make("nmdp", m, sc)
    q = m.neutral()
    q[2] = np.nan
    with pytest.raises(InputError, match="NaN"):
        integ.step(State.make(m, q), None, 0.01)


@pytest.mark.parametrize("dt", [0.01, 0.05])
def test_spider_stands_under_stable_pd(dt):
    """pbsim's spider (18 DOF: free torso, 4 legs of 3 joints) standing on a plane under stable
    PD for 1 s: every step converges, nothing hits the cap, the torso's height after settling
    varies by < 2 cm (measured: 0.5 mm at 10 ms, 10.4 mm at 50 ms: it bobs by +-5 mm).  At 50 ms
    Algorithm 2 halves steps (the projection's step bound and G's roots; measured min alpha
    0.25), at 10 ms it does not (pbsim/integrators/nmdp/step.py)."""
    from pbsim.contact.points import ContactPoints
    from pbsim_models.creatures import spider_contact_points, spider_standing

    m = pbsim_models.spider()
    p = spider_contact_points(m)
    pts = ContactPoints(p["points_body"], p["points_local"], p["points_radius"])
    integ = make("nmdp", m, Scene(environment=[Plane([0, 0, 1.0], 0.0)], points=pts, mu=0.8))
    q0 = spider_standing(m)
    kp, kd = np.zeros(m.nv), np.zeros(m.nv)
    kp[6:], kd[6:] = 150.0, 3.0
    ctl = pbsim.Control(mode="spd", kp=kp, kd=kd, q_ref=q0)
    s = State.make(m, q0)
    z, amin = [], 1.0
    for _ in range(int(round(1.0 / dt))):
        s, d = integ.step(s, ctl, dt)
        assert d.converged[0] and not d.extra["alpha_cap"][0]
        z.append(s.q[0, 2])
        amin = min(amin, d.extra["min_alpha"][0])
    z = np.array(z[len(z) // 4 :])
    assert np.ptp(z) < 0.02 and abs(z.mean() - q0[2]) < 0.02
    assert amin >= (1.0 if dt == 0.01 else 1 / 8)


def test_algorithm_2_sub_steps_carry_theta_and_thetadot():
    """A Newton step bound below g h^2 makes every level fail until h / 4 (g (h/4)^2 = 6e-5 <
    1e-4): each step becomes 4 sub-steps of alpha 1/4, carried one into the next, so n steps are
    exactly 4 n backward-Euler steps of h / 4 (the second half is retried at the half's size and
    split again: the recursion's order)."""
    m = box()
    sc = Scene(environment=[Plane([0, 0, 1.0], 0.0)], points=sample_contact_points(m), mu=0.5)
    integ = make("nmdp", m, sc, max_step=1e-4)
    q0 = m.neutral()
    q0[2] = 2.0
    s = State.make(m, q0, np.array([0.0, 0.0, 0.5, 0.0, 0.0, 0.0]))
    h, n = 0.01, 10
    for _ in range(n):
        s, d = integ.step(s, None, h)
        assert d.converged[0] and d.extra["substeps"][0] == 4 and d.extra["min_alpha"][0] == 0.25
        assert d.extra["projection_failures"][0] == 3  # levels 0 and 1, then level 1 again for the second half
    k, hs = 4 * n, h / 4
    assert np.isclose(s.q[0, 2], 2.0 + 0.5 * k * hs - G * hs * hs * k * (k + 1) / 2, rtol=0, atol=1e-10)
    assert np.isclose(s.v[0, 2], 0.5 - G * k * hs, atol=1e-10)


@pytest.mark.parametrize("method", ["nmdp", "pbd_nmdp"])
def test_pgm_step_on_cuda_backend_cudasim(tmp_path, method):
    """The PGM step kernel (integrators/pgm/ with the NE or the position-based hooks, the
    active-set QP and the projection) through the CUDA backend (CudaBatch, its cuda_twin; numba's
    CUDA simulator in a subprocess) equals the CPU integrator's three steps on a sliding and a
    falling box, outer iterations included (_cudasim_ne_mdp.py with the method's name)."""
    script = Path(__file__).with_name("_cudasim_ne_mdp.py")
    diffs, out = run_cudasim_twin(script, tmp_path / f"{method}_cpu.npz", cpu_args=(method,), argv=(method,))
    assert set(diffs) == {"q", "v", "e"}, out
    assert max(diffs.values()) <= 1e-10, diffs
    assert "ITER same" in out, out


def test_robosimian_script_measures_jump_apexes_and_step_cost_as_documented():
    """scripts/figures/nmdp_robosimian.py's B-T4 apex: the highest point from the push (0.8 s into each 2 s
    period) to the period's end, so the initial standing pose at t = 0 is no apex, and every full
    period counts even when float steps end at 9.99999 s; B-T8 compares the step cost only where
    ne_mdp completed."""
    import nmdp_robosimian as R

    t = np.arange(0.0, 10.0 + 1e-9, 0.01) * (1 - 1e-12)  # t[-1] = 9.99999...
    z = np.where((t % 2.0) > 0.8, 0.85 + 0.01 * np.sin(np.pi * ((t % 2.0) - 0.8) / 1.2), 0.80)
    z[0] = 0.933  # the initial stance, above every later apex (no lift-off)
    ap = R.apexes(dict(t=t, z=z))
    assert len(ap) == 5 and np.ptp(ap) < 1e-6 and abs(ap[0] - 0.86) < 1e-4

    def run(method, dt, done, wall):
        return dict(method=method, motion="walk", dt=dt, done=done, why="" if done else "NaN", wall=np.full(3, wall), t=t, x=t, z=z,
                    tilt=np.zeros_like(t), its=np.ones(3), amin=np.ones(3))  # fmt: skip

    runs = [run("nmdp", 0.005, True, 4e-3), run("ne_mdp", 0.005, True, 1e-3),
            run("nmdp", 0.05, True, 9e-3), run("ne_mdp", 0.05, False, 1e-4)]  # fmt: skip
    lines, _ = R.verdicts(runs, None, 10.0)
    bt8 = [x for x in lines if x.startswith("B-T8 (nmdp walk")]
    assert len(bt8) == 1 and "PASS" in bt8[0] and "5 ms 4.0x" in bt8[0] and "50 ms n/a" in bt8[0]


@pytest.mark.parametrize("metric", ["inertia", "step"])
def test_kinetic_energy_metric_and_its_gradient(metric):
    """``metric="inertia"``: K = 1/2 v^T H v (Eq. 6); ``"step"``: K + 1/2 v^T diag(arm) v, arm the
    step's implicit diagonal (SPD at the new state h Kd + h^2 Kp, implicit damping h d); the QP's
    ``M`` carries the same diagonal; dK/dtheta matches central differences (B-T1's bound)."""
    from pbsim.control import Control

    m = pbsim_models.chain(3, damping=0.05)
    dt, kp, kd = 0.02, 40.0, 0.5
    ctl = Control(mode="spd", kp=kp, kd=kd, q_ref=np.zeros(3))
    integ = make("nmdp", m, metric=metric)
    q0, v0 = np.array([0.3, -0.2, 0.5]), np.array([1.0, -0.5, 0.3])
    th = q0 + dt * v0 + 1e-3 * np.array([1.0, -2.0, 3.0])
    w = np.zeros(len(integ.candidates(q0, v0, dt, ctl)) * integ.vx)
    _G, _A, _B, K, g, M = integ.residual(q0, v0, th, w, dt, control=ctl)
    vel = (th - q0) / dt
    H = pbsim.crba(m, th)
    arm = (dt * kd + dt * dt * kp + dt * m.damping) if metric == "step" else np.zeros(3)
    assert np.isclose(K, 0.5 * vel @ (H + np.diag(arm)) @ vel, rtol=1e-12)
    assert np.allclose(M, H + np.diag(arm), rtol=1e-12, atol=1e-14)
    eps = 1e-6
    gfd = np.array([(integ.residual(q0, v0, th + eps * e, w, dt, control=ctl, deriv=False)[3]
                     - integ.residual(q0, v0, th - eps * e, w, dt, control=ctl, deriv=False)[3]) / (2 * eps)
                    for e in np.eye(3)])  # fmt: skip
    assert _rel(g, gfd) <= 1e-6, _rel(g, gfd)


def test_step_metric_lets_the_spider_jump_at_20ms():
    """The two-mass mechanism (scripts/figures/nmdp_two_mass.py): minimising 1/2 v^T H v with SPD implicit in
    the step lets the feet give way to the legs' push, so at 20 ms the spider's jump never leaves
    the ground (its torso stays below the stance); in the step's metric the contact stops the feet
    (maximal dissipation at the contacts) and the torso rises (measured, 10 s: apex -0.015 m vs
    +0.078 m; docs/benchmarks/nmdp.md)."""
    import nmdp_robosimian as R

    model, scene, q0 = R.build(robot="spider")
    top = {}
    for metric in ("inertia", "step"):
        r = R.simulate("nmdp", model, scene, q0, "jump", 0.02, 1.4, metric=metric)
        assert r["done"], r["why"]
        top[metric] = float(r["z"][r["t"] >= 0.8].max() - q0[2])
    assert top["inertia"] < 0.0 < 0.05 < top["step"], top


@pytest.mark.parametrize("method", ["nmdp_zo", "pbd_nmdp_zo"])
def test_zo_newton_projection_lands_a_box_in_few_evaluations(method):
    """Issue 30: the zeroth-order forms project with the exact A (``projection="newton"``, the
    default; the QP keeps Eq. 10's zeroth-order D).  A box dropped flat from 2 cm at 50 ms: Eq.
    11's chord projection took 20,539 evaluations a step on average (210,915 at most) and stopped
    1 mm deeper than the first order; the Newton projection 35 a step (347 at most), 0.19 mm from
    nmdp's rest height, every step converged without a sub-step."""
    m = box()
    sc = Scene(environment=[Plane([0, 0, 1.0], 0.0)], points=sample_contact_points(m), mu=0.5)
    q0 = m.neutral()
    q0[2] = 0.07
    z = {}
    for meth in ("nmdp", method):
        integ = make(meth, m, sc)
        s = State.make(m, q0)
        ev = []
        for _ in range(20):
            s, d = integ.step(s, None, 0.05)
            assert d.converged[0] and d.extra["min_alpha"][0] == 1.0
            ev.append(d.extra["evaluations"][0])
        z[meth] = s.q[0, 2]
    assert np.mean(ev) < 100  # measured 35.2 (the chord: 20,539)
    assert abs(z[method] - z["nmdp"]) < 5e-4  # measured 0.19 mm (the chord: 1.0 mm)


@pytest.mark.parametrize("method", ["nmdp", "pbd_nmdp_zo"])
def test_qp_in_dual_form_solves_the_formed_qp(method):
    """A box resting on a 20 deg plane has more QP weights than 4 nv, so its PGM QPs run in the dual
    form (pbsim.integrators.pgm.qp, ``x.qc`` > 0): the weights it returns satisfy the QP the formed
    path would have built (A = c I + R^T R from the step's own D~ and the factor of h^2 Q, b = qb)
    to the solver's tolerance, and sit on the capped simplices."""
    from pbsim.integrators.pgm.qp import DUAL_MIN_RATIO
    from pbsim.optim.qp import QP_SIMPLEX
    from tests.optim.test_qp import _natural_residual

    m, sc, q0 = _box_on_incline(20.0)
    integ = make(method, m, sc, on_fail="ignore")
    s = State.make(m, q0)
    seen = 0
    for _ in range(20):
        s, _d = integ.step(s, None, 0.01)
        x = integ._x  # noqa: SLF001 - the step's scratch
        nc = int(np.count_nonzero(x.bstart[0] >= 0)) - 1
        nw = nc * x.vx
        if x.qc[0] <= 0.0:
            continue
        assert nw > DUAL_MIN_RATIO * m.nv
        seen += 1
        Rt = x.HX[0, :nw, : m.nv]
        A = x.qc[0] * np.eye(nw) + Rt @ Rt.T
        bs, bt, cap = x.bstart[0, : nc + 1], x.btype[0, :nc], x.bmu[0, :nc]
        layout = (nw, x.lo[0, :nw].copy(), x.hi[0, :nw].copy(), bs.copy(), bt.copy(), cap.copy())
        # the scaled solution: the returned weights times the QP's cap / c_max (pgm_qp_unscale undone)
        u = np.repeat(cap, x.vx) * x.wn[0, :nw]
        assert _natural_residual(A, x.qb[0, :nw], layout, u) <= 1e-9
        for k in range(nc):
            if bt[k] == QP_SIMPLEX:
                blk = u[bs[k] : bs[k + 1]]
                assert (blk >= 0).all() and blk.sum() <= cap[k] * (1 + 1e-9)
    assert seen >= 5, seen


def _spinning_box_drop(method, bound, **options):
    """A box spinning at 20 rad/s dropped onto a plane, 20 steps of 50 ms through Integrator.step:
    per step the deepest point and Algorithm 2's sub-steps, and the final state."""
    m = box()
    sc = Scene(environment=[Plane(np.array([0.0, 0.0, 1.0]), 0.0)], points=sample_contact_points(m), mu=0.5,
               max_penetration=bound)  # fmt: skip
    integ = make(method, m, sc, on_fail="ignore", **options)
    q0 = m.neutral()
    q0[2] = 0.06
    v0 = np.zeros(6)
    v0[2], v0[3] = -1.0, 20.0
    s = State.make(m, q0, v0)
    pen, sub = [], []
    for _ in range(20):
        s, d = integ.step(s, None, 0.05)
        pen.append(float(d.penetration[0]))
        sub.append(int(d.extra["substeps"][0]))
    return np.array(pen), np.array(sub), s


@pytest.mark.parametrize("method", ["nmdp", "nmdp_zo"])
def test_step_limiter_halves_a_sub_step_that_sinks_past_the_bound(method):
    """Issue 30's step limiter (option depth_limit): with the bound at 8 mm, the spinning corner
    sinks 11-17 mm in one 50 ms step without it; with it, Algorithm 2 splits that step (sub-steps
    counted) and no point ends deeper than the bound.  A run that never passes the bound (pbd_nmdp
    here) is the same to the last bit with and without it."""
    pen0, sub0, _ = _spinning_box_drop(method, 0.008, depth_limit=False)
    pen1, sub1, _ = _spinning_box_drop(method, 0.008)
    assert pen0.max() > 0.010 and (sub0 == 1).all()
    assert pen1.max() <= 0.008 and sub1.max() > 1
    pa, sa, qa = _spinning_box_drop("pbd_nmdp", 0.008, depth_limit=False)
    pb, sb, qb = _spinning_box_drop("pbd_nmdp", 0.008)
    assert pa.max() <= 0.008 and np.array_equal(sa, sb) and np.array_equal(qa.q, qb.q)


@pytest.mark.parametrize("method", ["nmdp", "nmdp_zo", "pbd_nmdp"])
def test_step_limiter_leaves_a_point_resting_past_the_bound(method):
    """Issue 30 regression: the limiter split a sub-step whenever its deepest point ended deeper than
    the bound and than at its start, so a box resting 6 mm deep with the bound at 1 mm, its depth
    moving by round-off, ran the cap's 64 sub-steps every 20 ms step (the a1 at rest 50.8 mm deep:
    0.9 s a step).  "Deeper than it began" now means by more than ``DEEPER_TOL`` (1 um): measured 1
    sub-step a step at rest (nmdp_zo's slow oscillation: 2 every fourth step)."""
    m = box()
    sc = Scene(environment=[Plane(np.array([0.0, 0.0, 1.0]), 0.0)], points=sample_contact_points(m), mu=0.5,
               max_penetration=0.001)  # fmt: skip
    integ = make(method, m, sc, on_fail="ignore")
    q0 = m.neutral()
    q0[2] = 0.05
    s = State.make(m, q0)
    sub = []
    for _ in range(60):
        s, d = integ.step(s, None, 0.02)
        sub.append(int(d.extra["substeps"][0]))
    assert d.penetration[0] > 0.005  # resting past the bound
    assert max(sub[30:]) <= 2 and np.mean(sub[30:]) < 1.5, sub[30:]  # before: 64 every step


def _a1_start(i):
    """pybullet_data's a1 as scripts/checks/robustness.py drops it: ``(model, scene, q0, v0)`` of start
    ``i`` (lowest point 1 cm up, 0.01 rad/s random joint velocities, seed 0, 8 starts)."""
    m = pbsim.load(pybullet_file("a1/a1.urdf"))
    sc = pbsim.default_scene(m, ground="auto")
    q0 = np.array(m.default_configuration(), float)
    low = float((pbsim.contact_query(m, sc, q0)["X"][0][:, 2] - sc.points.radius).min())
    q0[2] += max(0.01 - low, 0.0)
    v0 = np.zeros(m.nv)
    v0[6:] = 0.01 * np.random.default_rng(0).standard_normal((8, m.nv - 6))[i]
    return m, sc, q0, v0


def test_first_order_qps_stay_in_dual_form_on_a_resting_a1():
    """Issue 30 regression: the first order's gamma grew by eta with every accepted iterate, without
    bound; on pybullet_data's a1 lying on its floor (116 candidates, 464 weights, nv 18) a 20 ms step
    takes ~20 accepts, so ``c = 2 / (gamma + 2)`` fell below ``DUAL_MIN_C``, the QP left the dual form,
    the active set's free set outgrew its factor and FISTA finished at ``c`` ~ 1e-8: 2,600 QP
    iterations a QP, 11 s a step (start 2 of the robustness matrix, steps 50-55).  Now a QP with more
    than ``DUAL_MIN_RATIO`` nv weights bounds gamma as the zeroth order does (``GAMMA_MAX``), so
    every such QP stays in the dual form (``x.qc`` > 0): measured 8 QP iterations a QP."""
    from pbsim.integrators.pgm.qp import DUAL_MIN_RATIO

    m, sc, q0, v0 = _a1_start(2)
    integ = make("nmdp", m, sc, on_fail="ignore")
    s = State.make(m, q0, v0)
    worst, dual = 0.0, 0
    for k in range(56):
        s, d = integ.step(s, None, 0.02)
        x = integ._x  # noqa: SLF001 - the step's scratch
        nw = (int(np.count_nonzero(x.bstart[0] >= 0)) - 1) * x.vx
        if k >= 40:  # at rest on its belly and legs
            assert d.converged[0]
            worst = max(worst, d.extra["qp_iterations"][0] / max(d.extra["qp_solves"][0], 1.0))
            if nw > DUAL_MIN_RATIO * m.nv:
                assert x.qc[0] > 0.0, k  # the step's last QP ran in dual form
                dual += 1
    assert dual >= 10, dual
    assert worst < 50, worst  # measured 8.6 (before: 2,600 and 11 s a step)


def test_dual_qp_gets_the_newton_steps_it_needs_on_the_a1():
    """Issue 30 regression: the dual form gave up after 30 semismooth Newton steps and the formed
    matrix took over, whose active set outgrew its factor on the a1's 500-odd weights and left the
    QP to FISTA at ``c`` ~ 3e-5.  nmdp_zo from the robustness matrix's start 1 at 20 ms: step 42's
    67 QPs took 14,330 iterations (3.8 s); with ``QP_MAXIT_DUAL`` = 100 they take 922 (0.1 s), and
    the first 46 steps 8,252 QP iterations in all (before: about 26,600)."""
    m, sc, q0, v0 = _a1_start(1)
    integ = make("nmdp_zo", m, sc, on_fail="ignore")
    s = State.make(m, q0, v0)
    its = qps = 0.0
    for _ in range(46):
        s, d = integ.step(s, None, 0.02)
        its += d.extra["qp_iterations"][0]
        qps += d.extra["qp_solves"][0]
    assert qps > 1000, qps  # measured 1,611: the PGM iterates, the QPs are the cost
    assert its < 15000, its  # measured 8,252 (QP_MAXIT_DUAL 30: ~26,600)
