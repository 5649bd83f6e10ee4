"""pbd_friction (paper 003 Eq. 11, the PBD friction baseline B1 of the note): the gradient and
Hessian of its energy against central differences (the spurious normal force of Eq. 12
included), equality with pbad without contact, the box's rest depth, Fig. 5's failure (the
sliding distance is not monotone in C_par, while pbfd's is), the three optimizers, options, and
CpuBatch against the integrator's step."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import pbsim
import pbsim_models
from conftest import run_cudasim_twin
from pbad_fd import chart_gradient
from pbsim.errors import InputError
from pbsim.integrators import State, make
from test_pbad_scene import box_model
from test_pbfd import _box_state, _check_contact, _run, check_cpu_batch

HALF = 0.1  # the box's half size [m]; 1 kg; 20 contact points (8 corners, 12 edge midpoints)


@pytest.fixture(scope="module")
def box():
    m = box_model()
    return m, pbsim.make_scene(m, ground="plane", mu=0.5)


# ---------------------------------------------------------------------------------------------
# derivatives


def _fd(I, q, v, qe, dt, eps=1e-6):
    """Relative errors of grad E (vs central differences of E) and hess E (vs differences of
    grad E) at qe, tangent increments with the charts of pbad_fd; and hess E's asymmetry."""
    m, n = I.model, I.model.nv
    E, g, H = I.objective(q, v, qe, dt)
    g, H = g[0], H[0]
    gf, Hf = np.zeros(n), np.zeros((n, n))
    for a in range(n):
        e = np.zeros(n)
        e[a] = eps
        qp, qm = pbsim.integrate(m, qe, e), pbsim.integrate(m, qe, -e)
        (Ep, gp, _), (Em, gm, _) = I.objective(q, v, qp, dt, hessian=False), I.objective(q, v, qm, dt, hessian=False)
        gf[a] = (Ep[0] - Em[0]) / (2 * eps)
        Hf[:, a] = (chart_gradient(m, e, gp[0]) - chart_gradient(m, -e, gm[0])) / (2 * eps)

    def rel(a, b):
        return np.abs(a - b).max() / np.abs(b).max()

    return rel(g, gf), rel(H, Hf), np.abs(H - H.T).max() / np.abs(H).max()


def _spurious(I, q, v, qe, dt):
    """grad E's normal part from friction: grad E with C_par minus grad E with C_par = 0, and the
    same for pbfd's residual (no spurious force: the difference is tangential only)."""
    m, sc = I.model, I.scene
    kw = dict(c_normal=I.c_normal)
    g1 = I.objective(q, v, qe, dt, hessian=False)[1][0]
    g0 = make("pbd_friction", m, sc, c_friction=0.0, **kw).objective(q, v, qe, dt, hessian=False)[1][0]
    r1 = make("pbfd", m, sc, c_friction=I.c_friction, **kw).residual(q, v, qe, dt, jacobian=False)[1][0]
    return g1 - g0, r1 - g0


def test_derivatives_box_on_plane(box):
    """The energy's gradient and Hessian (exact Hessian: Algorithm 2 + the points' J^T K J) match
    central differences of E and of grad E with friction dominant at 6 points in contact, sliding
    and turning (measured: 7.1e-10 and 6.3e-11); the Hessian is symmetric (a true energy, on a plane);
    the spurious normal force is there: the friction's contribution to grad E has a part along
    the box's vertical DOF (which pbfd's friction residual lacks at the same C_par; measured: dE/dz
    -279 N against 6e-15 N)."""
    m, scene = box
    I = make("pbd_friction", m, scene, c_friction=3e6)
    q, v, qe = _box_state(m)
    _check_contact(m, scene, q, qe)
    eg, eH, asym = _fd(I, q, v, qe, 0.02)
    assert eg < 1e-6 and eH < 1e-6, (eg, eH)
    assert asym < 1e-9, asym
    # vertical (world z) generalized force of the friction terms: the body-frame linear DOFs of the
    # free joint rotated to world; pbfd's friction is tangential -> only its torque / tilt couples
    d_pbd, d_pbfd = _spurious(I, q, v, qe, 0.02)
    Rw = _body_rotation(m, qe)
    fz_pbd, fz_pbfd = (Rw @ d_pbd[:3])[2], (Rw @ d_pbfd[:3])[2]
    assert fz_pbd < 0 and abs(fz_pbd) > 1e3 * abs(fz_pbfd), (fz_pbd, fz_pbfd)  # dE/dz < 0: f* pushes up


def _body_rotation(m, q):
    """World rotation of the free body at q (quaternion w, x, y, z in q[3:7])."""
    w, x, y, z = q[3:7] / np.linalg.norm(q[3:7])
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )


def test_derivatives_chain_on_plane():
    """A 4-link revolute chain with capsule points pressed into a plane (the point-Hessian
    contraction through the joints), other exponents (alpha 2.5, beta 1.5, gamma 0.7; measured:
    4.2e-10 and 2.8e-10; 1.3e-10 and 9.6e-11 with the defaults)."""
    m = pbsim_models.chain(4)
    scene = pbsim.make_scene(m, ground="plane", ground_height=-0.22, mu=0.5)
    I = make("pbd_friction", m, scene, c_friction=5e6, alpha=2.5, beta=1.5, gamma=0.7)
    q = np.array([1.2, 0.4, -0.3, 0.5])
    v = np.array([0.5, -0.8, 1.0, -0.6])
    qe = q + 0.02 * v + np.array([0.01, -0.01, 0.02, 0.0])
    _check_contact(m, scene, q, qe)
    eg, eH, asym = _fd(I, q, v, qe, 0.02)
    assert eg < 1e-6 and eH < 1e-6, (eg, eH)


# ---------------------------------------------------------------------------------------------
# without contact: pbad


def test_no_contact_equals_pbad():
    """Fixed-base 10-link chain (ball2 joints, 20 DOF) released horizontally, dt = 0.05, 200
    steps, no contact: E is PBAD's Eq. 5, and pbd_friction (the same LM on the same energy,
    |grad E| tolerance 1e-9 M g) follows pbad to max |dq| <= 1e-6 at every step; so does the
    JTJ-LM optimizer (measured: LM bit-identical to pbad, |dq| = 0; JTJ-LM 9.6e-8, pbfd's A-T2)."""
    m = pbsim_models.chain(10, joint="ball2")
    A, B, C = make("pbad", m), make("pbd_friction", m), make("pbd_friction", m, optimizer="jtj")
    sa, sb, sc = State.make(m), State.make(m), State.make(m)
    worst, worst_j = 0.0, 0.0
    for _ in range(200):
        sa, _da = A.step(sa, None, 0.05)
        sb, db = B.step(sb, None, 0.05)
        sc, dc = C.step(sc, None, 0.05)
        assert db.converged.all() and dc.converged.all()
        worst = max(worst, np.abs(sa.q - sb.q).max())
        worst_j = max(worst_j, np.abs(sa.q - sc.q).max())
    assert worst <= 1e-6 and worst_j <= 1e-6, (worst, worst_j)


# ---------------------------------------------------------------------------------------------
# a box on a plane


@pytest.mark.parametrize("dt", [0.01, 0.1])
def test_box_rests_where_c_normal_d2_carries_its_weight(box, dt):
    """Dropped from 5 cm, the box rests on its 8 bottom points at the depth where 8 C_perp d^2 =
    M g (friction, spurious force included, vanishes at rest): d = delta_ref / sqrt(2) with the
    default C_perp, half of it with C_perp 4x larger."""
    m, scene = box
    q0 = m.neutral()
    q0[2] = HALF + 0.05
    for cn in (None, 4 * 9.81 / (4 * 0.005**2)):
        I = make("pbd_friction", m, scene, c_normal=cn)
        s, pen, res, conv, _ = _run(I, q0, None, dt, 3.0)
        d = np.sqrt(9.81 / (8 * I.c_normal))
        assert abs((HALF - s.q[0, 2]) - d) < 1e-7, (HALF - s.q[0, 2], d)
        assert np.abs(s.q[0, :2]).max() < 1e-9 and np.linalg.norm(s.v[0]) < 1e-5
        assert pen < 0.02 and conv.all()


FACTORS = np.logspace(-4, 4, 9)


def _slide(I, dt, T=5.0):
    m = I.model
    q0 = m.neutral()
    q0[2] = HALF - np.sqrt(9.81 / (8 * I.c_normal))
    s, pen, res, conv, its = _run(I, q0, np.array([1.0, 0, 0, 0, 0, 0]), dt, T)
    return s.q[0, 0] - q0[0], pen, conv


@pytest.mark.parametrize("dt", [0.05])
def test_fig5_pbd_friction_is_not_monotone_pbfd_is(box, dt):
    """Fig. 5(b-c) / A-T5: the box slides from rest depth at 1 m/s for 5 s, C_par over 9
    log-spaced values (1e-4 ... 1e4 of the nominal C_perp / (2 g dt^2 v0 T)).  pbfd's distance is
    non-increasing; pbd_friction's first decreases, then increases by >= 10 % between neighbours
    once the spurious normal force (gamma+1) C_par |u|^2 d outgrows C_perp d^2 and lifts the box
    out of contact (measured, the same runs as scripts/figures/fig_pbfd_sliding.py at dt 0.05: pbd_friction
    4.995 m at C_par 40, down to 2.01 m at 4e5, up to 4.84 m at 4e6 (+141 %) and 5.00 m at 4e9, max
    depth 3.53 mm -> 0.00 mm; pbfd 5.00 -> 0.006 m, never increasing; docs/benchmarks/pbfd.md)."""
    m, scene = box
    cn = make("pbfd", m, scene).c_normal
    nominal = cn / (2 * 9.81 * dt * dt * 5.0)
    xa, xb, pen_b = [], [], []
    for f in FACTORS:
        cf = float(f * nominal)
        xa.append(_slide(make("pbfd", m, scene, c_friction=cf), dt)[0])
        x, pen, conv = _slide(make("pbd_friction", m, scene, c_friction=cf), dt)
        assert conv.mean() >= 0.99
        xb.append(x)
        pen_b.append(pen)
    xa, xb = np.array(xa), np.array(xb)
    assert np.all(np.diff(xa) <= 1e-4), xa
    inc = np.diff(xb) / xb[:-1]
    assert inc.max() >= 0.10, xb
    k = int(np.argmin(xb))
    assert 0 < k < len(xb) - 1 and xb[0] > 1.5 * xb[k] and xb[-1] > 1.5 * xb[k], xb  # down, then up
    assert pen_b[-1] < 0.2 * pen_b[0], pen_b  # lifted out of contact at the largest C_par


def test_optimizers_reach_the_same_steps(box):
    """LM on E (default), LM with the Gauss-Newton Hessian, JTJ-LM on |grad E|^2 / 2 and LBFGS on E
    reach the same states (box landing and sliding, dt = 0.05, 1 s); LBFGS with more iterations."""
    m, scene = box
    q0 = m.neutral()
    q0[2] = HALF + 0.05
    v0 = np.array([1.0, 0, 0, 0, 0, 0])
    opts = {"lm": {}, "gn": dict(hessian="gn"), "jtj": dict(optimizer="jtj"), "lbfgs": dict(optimizer="lbfgs")}
    runs = {k: _run(make("pbd_friction", m, scene, c_friction=1e4, **o), q0, v0, 0.05, 1.0) for k, o in opts.items()}
    for o in ("gn", "jtj", "lbfgs"):
        assert np.abs(runs[o][0].q - runs["lm"][0].q).max() < 1e-6, o
        assert runs[o][3].all(), o
    assert runs["lbfgs"][4].mean() > 2 * runs["lm"][4].mean()


# ---------------------------------------------------------------------------------------------
# options, batch driver


@pytest.mark.parametrize(
    "opts",
    [
        dict(c_normal=-1.0),
        dict(c_normal=float("nan")),
        dict(c_friction=-5.0),
        dict(c_friction=float("nan")),
        dict(alpha=1.0),
        dict(alpha=0.5),
        dict(beta=0.0),
        dict(gamma=float("nan")),
        dict(rtol=-1.0),
        dict(max_iterations=0),
        dict(optimizer="newton"),
        dict(hessian="bfgs"),
        dict(c_frction=1.0),
    ],
)
def test_bad_options_raise(box, opts):
    m, scene = box
    with pytest.raises(InputError, match="c_frction|optimizer|hessian|pbd_friction"):
        make("pbd_friction", m, scene, **opts)


def test_default_c_friction_rule(box):
    """c_friction=None: C_par matched to the scene's mu at 0.1 m/s for the step's dt with the
    energy form's exponent (mu_eff = 2 (C_par / C_perp) dt |v_t|): C_par = mu C_perp / (2 dt 0.1)."""
    m, scene = box
    I = make("pbd_friction", m, scene)
    for dt in (0.01, 0.1):
        assert I.friction_at(dt) == pytest.approx(0.5 * I.c_normal / (2 * dt * 0.1), rel=1e-12)


def test_cpu_batch_equals_integrator_step(box):
    """CpuBatch('pbd_friction') (the generic batch driver on the LM step kernel) gives the
    integrator's steps bit for bit: 3 boxes landing while sliding, dt = 0.05."""
    check_cpu_batch(box, "pbd_friction", 1e4, "jtj")


def test_pbd_friction_step_on_cuda_backend_cudasim(tmp_path):
    """pbd_friction's LM step kernel and its per-launch phases (PBAD's, specialised with the energy
    form) through the CUDA backend (CudaBatch under numba's CUDA simulator, in a subprocess) equal
    the CPU integrator, iterations included: boxes sliding on two facets of a heightfield
    (tests/integrators/_cudasim_pbfd.py with METHOD pbd_friction)."""
    diffs, out = run_cudasim_twin(
        Path(__file__).with_name("_cudasim_pbfd.py"),
        tmp_path / "pbd_cpu.npz",
        cpu_args=("pbd_friction", 1e4),
        argv=("pbd_friction", "1e4"),
        timeout=900,
    )
    assert set(diffs) == {"q", "v", "e", "q_launch", "v_launch", "e_launch"}, out
    assert max(diffs.values()) <= 1e-10, diffs
    assert "ITER same" in out and "ITER_launch same" in out, out
    assert "REFUSED launch" in out, out  # the per-launch schedule has no sub-step fallback (issue 30)
