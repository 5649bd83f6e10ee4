"""``pbd_nmdp`` / ``pbd_nmdp_zo`` (PBD-NMDP of paper 002 Eq. 12; notes/pbfd_nmdp.md B1, B4, B5):
the position-based form on PBAD's energy, through the PGM shared with ``nmdp``
(pbsim/integrators/pgm/).

B-T1: A = dG/dtheta (first order), B = dG/dw, g = dK/dtheta and Q (``k_hessian="exact"``) against
central differences, <= 1e-6 relative, on test_nmdp's spinning box on a tilted plane (free joint)
and ball-joint chain on a sphere, at alpha = 1 and alpha = 1/2; the zeroth-order A differs by
exactly ``-sum_x J_x^T (dv_x/dtheta) w_x``; the default Q is PBAD's Gauss-Newton M_rigid / h^2
(= CRBA's mass matrix without armature, PSD).  Without contact a step is PBAD order 2's (``pbad``)
to 1e-9.  B-T2: the invariants on accepted iterates.  B-T3: the incline (stick at 20 deg, slide at
g (sin 35 - 0.5 cos 35) at 35 deg).  CpuBatch equals Integrator.step; the cap is flagged; bad
options are InputErrors.
"""

import sys
from pathlib import Path

import numpy as np
import pytest

import pbsim
import pbsim_models
from pbsim.contact import Plane, Scene, sample_contact_points
from pbsim.contact.nmdp import nmdp_vertices
from pbsim.control import Control
from pbsim.errors import InputError
from pbsim.integrators import State, make
from test_nmdp import CASES, _body_pose, _rel, _state_in_contact

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts" / "figures"))
from bench_nmdp_incline import box, slide, stick  # noqa: E402

G = 9.81


def _bracket(m, g):
    """N(g) of pbsim/integrators/pbd_nmdp/step.py: d g(theta (+) delta) / d delta minus the symmetric
    Hessian, for a tangent gradient g (1/2 [g_rot]x per ball/free joint, [g_lin]x in a free joint's
    (lin, rot) block)."""

    def hat(u):
        return np.array([[0, -u[2], u[1]], [u[2], 0, -u[0]], [-u[1], u[0], 0]])

    N = np.zeros((m.nv, m.nv))
    for i in range(m.nb):
        j = int(m.k.iv[i])
        if m.k.nvj[i] == 3:  # ball
            N[j : j + 3, j : j + 3] = 0.5 * hat(g[j : j + 3])
        elif m.k.nvj[i] == 6:  # free: (lin, rot)
            N[j + 3 : j + 6, j + 3 : j + 6] = 0.5 * hat(g[j + 3 : j + 6])
            N[j : j + 3, j + 3 : j + 6] = hat(g[j : j + 3])
    return N


@pytest.mark.parametrize("alpha", [1.0, 0.5])
@pytest.mark.parametrize("case", sorted(CASES))
def test_bt1_first_order_A_B_grad_K_and_Q_match_central_differences(case, alpha):
    m, sc, q0, v0 = CASES[case]()
    dt = 0.02
    integ = make("pbd_nmdp", m, sc, k_hessian="exact")
    th, w, cand = _state_in_contact(integ, q0, v0, dt)
    assert (nmdp_vertices(m, sc, th)["sd"][cand] > 0).sum() >= 1  # the cubic term is live
    fdt = dt / alpha  # the sub-step dt of a frame step dt / alpha
    Gv, A, B, K, g, M = integ.residual(q0, v0, th, w, dt, frame_dt=fdt)
    eps = 1e-6
    Afd, Jg, gfd = np.zeros_like(A), np.zeros_like(A), np.zeros(m.nv)
    for j in range(m.nv):
        e = np.zeros(m.nv)
        e[j] = eps
        rp = integ.residual(q0, v0, pbsim.integrate(m, th, e), w, dt, frame_dt=fdt)
        rm = integ.residual(q0, v0, pbsim.integrate(m, th, -e), w, dt, frame_dt=fdt)
        Afd[:, j] = (rp[0] - rm[0]) / (2 * eps)
        gfd[j] = (rp[3] - rm[3]) / (2 * eps)
        Jg[:, j] = (rp[4] - rm[4]) / (2 * eps)
    assert _rel(A, Afd) <= 1e-6, _rel(A, Afd)  # measured 8e-11 (box), 4e-10 (chain)
    assert _rel(g, gfd) <= 1e-6, _rel(g, gfd)
    Q = M / dt**2  # residual() returns h^2 Q
    assert _rel(Q, Jg - _bracket(m, g)) <= 1e-6, _rel(Q, Jg - _bracket(m, g))
    assert np.allclose(Q, Q.T, rtol=0, atol=1e-9 * np.abs(Q).max())
    Bfd = np.zeros_like(B)
    for r in range(B.shape[1]):  # G is affine in w
        e = np.zeros(B.shape[1])
        e[r] = 1.0
        Bfd[:, r] = integ.residual(q0, v0, th, w + e, dt, deriv=False, frame_dt=fdt)[0] - Gv
    assert _rel(B, Bfd) <= 1e-9
    assert K > 0


@pytest.mark.parametrize("case", sorted(CASES))
def test_bt1_zeroth_order_A_drops_exactly_the_vertex_derivative(case):
    """A_FO - A_ZO = -sum_x J_a^T (sum_i w_i dv^i/dtheta), dv/dtheta from pbsim.contact.nmdp."""
    m, sc, q0, v0 = CASES[case]()
    dt = 0.02
    fo, zo = make("pbd_nmdp", m, sc), make("pbd_nmdp_zo", m, sc)
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
        want -= Ja.T @ np.einsum("i,ijk->jk", W[ci], wv["dV"][kp])
    assert _rel(A1 - A0, want) <= 1e-9
    assert np.abs(want).max() > 1e-3 * np.abs(A1).max()


@pytest.mark.parametrize("case", sorted(CASES))
def test_default_q_is_the_gauss_newton_mass_matrix(case):
    """k_hessian='gn' (default): h^2 Q = M_rigid(theta) = CRBA's M without armature, PSD: the QP's
    D^T Q D + prox I is convex; K = 1/2 |X - X_-|^2 / h^2 is >= 0 and K's exact Q differs by
    the poses' second-order part only."""
    m, sc, q0, v0 = CASES[case]()
    dt = 0.02
    integ = make("pbd_nmdp", m, sc)
    th, w, _cand = _state_in_contact(integ, q0, v0, dt)
    M = integ.residual(q0, v0, th, w, dt)[5]
    Mc = pbsim.crba(m, th) - np.diag(np.asarray(m.k.armature, float))
    assert _rel(M, Mc) <= 1e-12
    assert np.linalg.eigvalsh(0.5 * (M + M.T)).min() > 0
    Mx = make("pbd_nmdp", m, sc, k_hessian="exact").residual(q0, v0, th, w, dt)[5]
    assert 0 < _rel(Mx, M) < 0.1


def _pbad_pair(model, scene, q0, v0, ctl, dt, steps):
    a = State.make(model, q0, v0)
    b = State.make(model, q0, v0)
    pn = make("pbd_nmdp", model, scene, tol=1e-13)
    pb = make("pbad", model, scene, gtol=1e-11)
    dq = dv = 0.0
    for _ in range(steps):
        a, da = pn.step(a, ctl, dt)
        b, db = pb.step(b, ctl, dt)
        assert da.converged[0] and db.converged[0] and da.extra["substeps"][0] == 1
        dq = max(dq, np.abs(pbsim.difference(model, b.q[0], a.q[0])).max())
        dv = max(dv, np.abs(a.v - b.v).max())
    return dq, dv


def test_without_contact_alpha_1_is_the_pbad_order_2_step():
    """No contact in reach, alpha = 1: I_alpha + P_g + E_j is PBAD's Eq. 5 objective, so a
    pbd_nmdp step (Newton projection onto its stationary point) equals pbad's (LM minimiser of
    it): a damped 4-link chain under stable PD (200 steps of 10 ms) and a tumbling free box
    (spin and translation, 30 steps of 20 ms), q and v within 1e-9 every step."""
    model = pbsim_models.chain(4, damping=0.05)
    ctl = Control(mode="spd", kp=2.0, kd=0.2, q_ref=np.zeros(4))
    dq, dv = _pbad_pair(model, None, np.array([0.4, -0.3, 0.2, 0.1]), np.zeros(4), ctl, 0.01, 200)
    assert dq <= 1e-9 and dv <= 1e-9, (dq, dv)
    m = box()
    q0 = m.neutral()
    q0[2] = 3.0
    quat = np.array([0.9, 0.3, -0.2, 0.1])
    q0[3:7] = quat / np.linalg.norm(quat)
    dq, dv = _pbad_pair(m, None, q0, np.array([0.5, -0.3, 1.0, 2.0, -3.0, 1.5]), None, 0.02, 30)
    assert dq <= 1e-9 and dv <= 1e-9, (dq, dv)


# B-T2: parametrized over both forms in test_nmdp.py


@pytest.mark.parametrize("method,dt", [("pbd_nmdp", 5e-3), ("pbd_nmdp", 50e-3), ("pbd_nmdp_zo", 5e-3)])
def test_bt3_incline_20deg_sticks(method, dt):
    """tan 20 = 0.36 < mu = 0.5: after 0.5 s of settling the box moves < 1 mm in 2 s."""
    r = stick(method, dt)
    assert r["conv"].all()
    assert r["creep"] < 1e-3  # measured: docs/benchmarks/nmdp.md, section pbd_nmdp


@pytest.mark.parametrize("method,dt", [("pbd_nmdp", 5e-3), ("pbd_nmdp", 50e-3), ("pbd_nmdp_zo", 5e-3)])
def test_bt3_incline_35deg_slides_at_g_sin_minus_mu_cos(method, dt):
    want = G * (np.sin(np.radians(35)) - 0.5 * np.cos(np.radians(35)))
    r = slide(method, dt)
    assert r["conv"].all()
    assert abs(r["acc"] - want) <= 0.1 * want


# CpuBatch == step and the sub-step cap: parametrized over both forms in test_nmdp.py


@pytest.mark.parametrize(
    "opts,match",
    [
        (dict(vx=2), "vx"),
        (dict(k=-1.0), "k"),
        (dict(eta=1.0), "eta"),
        (dict(tol=0.0), "tol"),
        (dict(max_iterations=0), "max_iterations"),
        (dict(substep=-1), "substep"),
        (dict(max_step=float("nan")), "max_step"),
        (dict(on_fail="boom"), "on_fail"),
        (dict(k_hessian="bfgs"), "k_hessian"),
        (dict(gamma=2.0), "no option"),
    ],
)
def test_bad_options_are_input_errors(opts, match):
    m = box()
    sc = Scene(environment=[Plane([0, 0, 1.0], 0.0)], points=sample_contact_points(m), mu=0.5)
    for name in ("pbd_nmdp", "pbd_nmdp_zo"):
        with pytest.raises(InputError, match=match):
            make(name, m, sc, **opts)
    q = m.neutral()
    q[2] = np.nan
    with pytest.raises(InputError, match="NaN"):
        make("pbd_nmdp", m, sc).step(State.make(m, q), None, 0.01)


def test_two_mass_mdp_jump_sinks_the_foot_by_the_predicted_fraction():
    """scripts/figures/nmdp_two_mass.py (docs/benchmarks/nmdp.md, "Why the jump does not lift off"): on
    the exactly solved two-mass hopper the minimum-KE foot force lets the foot sink
    (M / (M + m)) (s - 1) / s of the 0.26 m push (within 10 %), so MDP lifts off at 1 ms and not
    at 5 or 50 ms, while rigid contact (LCP) lifts off at every dt; the same for the walk's push."""
    import nmdp_two_mass as tm

    mu = tm.M * tm.m / (tm.M + tm.m)
    for h in (0.005, 0.05):
        apex, lo, _hi = tm.run("nmdp", h, seconds=2.0)
        s = 1.0 + h * (tm.KD + h * tm.KP) / mu
        predicted = tm.M / (tm.M + tm.m) * (s - 1.0) / s * 0.26
        assert abs(-lo - predicted) < 0.1 * predicted, (h, lo, predicted)
        assert apex[0] < 0.01  # no lift-off
        assert tm.run("lcp", h, seconds=2.0)[0][0] > 0.15
    assert tm.run("nmdp", 0.001, seconds=2.0)[0][0] > 0.2
    # the walk's stance push: Coulomb stick carries the torso the whole 0.2 m at every dt, the
    # minimum-KE friction lets the foot slide back, more the larger the step
    moved = [tm.stroke("nmdp", h)[0] for h in (0.001, 0.01, 0.05)]
    assert moved[0] > moved[1] > moved[2] and moved[2] < 0.05
    assert all(abs(tm.stroke("lcp", h)[0] - 0.2) < 1e-3 for h in (0.001, 0.05))
