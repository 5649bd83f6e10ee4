"""PBFD (paper 003, pbsim.integrators.pbfd): derivatives of the residual against central
differences (the note's A-T1), equivalence with PBAD without contact (A-T2), a box resting at
the depth where C_perp d^2 carries its weight, a sliding box (distance against C_par, the A-T4
reference recursion), true convergence on |r| (A-T3), the stall fallback, options, the batch
driver, friction_for_mu."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import pbsim
import pbsim_models
from conftest import batch_equals_step, run_cudasim_twin
from pbad_fd import chart_gradient
from pbsim.backends.cpu import CpuBatch
from pbsim.contact import HeightField
from pbsim.errors import InputError
from pbsim.integrators import State, make
from pbsim.integrators.pbfd import friction_for_mu
from test_pbad_scene import box_model

HALF = 0.1  # the box's half size [m]; 1 kg; 20 contact points (8 corners, 12 edge midpoints)


# ---------------------------------------------------------------------------------------------
# A-T1: r, J_r and grad GE against central differences


def _fd(I, q, v, qe, dt, eps=1e-6):
    """Central differences at qe (tangent increments, charts as in pbad_fd): of E (with C_par = 0,
    where r = grad E), of r (-> J_r) and of GE = |r|^2 / 2 (-> J_r^T r).  Returns the relative
    errors (r, J_r, grad GE) and J_r's relative asymmetry."""
    m, n = I.model, I.model.nv
    I0 = make("pbfd", m, I.scene, c_normal=I.c_normal, c_friction=0.0)
    E, r, J = I.residual(q, v, qe, dt)
    _, r0, _ = I0.residual(q, v, qe, dt, jacobian=False)
    r, J, r0 = r[0], J[0], r0[0]
    gE, Jf, gGE = np.zeros(n), np.zeros((n, n)), np.zeros(n)
    for a in range(n):
        e = np.zeros(n)
        e[a] = eps
        qp, qm = pbsim.integrate(m, qe, e), pbsim.integrate(m, qe, -e)
        (_, rp, _), (_, rm, _) = I.residual(q, v, qp, dt, jacobian=False), I.residual(q, v, qm, dt, jacobian=False)
        Jf[:, a] = (chart_gradient(m, e, rp[0]) - chart_gradient(m, -e, rm[0])) / (2 * eps)
        gGE[a] = (rp[0] @ rp[0] - rm[0] @ rm[0]) / (4 * eps)
        (Ep, _, _), (Em, _, _) = I0.residual(q, v, qp, dt, jacobian=False), I0.residual(q, v, qm, dt, jacobian=False)
        gE[a] = (Ep[0] - Em[0]) / (2 * eps)

    def rel(a, b):
        return np.abs(a - b).max() / np.abs(b).max()

    return rel(r0, gE), rel(J, Jf), rel(J.T @ r, gGE), np.abs(J - J.T).max() / np.abs(J).max()


def _box_state(m, x0=0.0):
    """A tilted box pressed into the ground at (x0, 0), sliding and turning (every bottom point
    in contact with d > 0 and moving tangentially in the step)."""
    q = m.neutral()
    q[0], q[2] = x0, HALF
    q = pbsim.integrate(m, q, np.array([0.0, 0, 0, 0.05, -0.03, 0.02]))
    v = np.array([0.8, 0.3, -0.2, 0.4, 0.3, -0.5])
    qe = pbsim.integrate(m, q, 0.02 * v + np.array([0.01, 0.0, -0.004, 0.02, -0.01, 0.01]))
    return q, v, qe


def _check_contact(m, scene, q, qe):
    """Points are in contact at qe and move tangentially between q and qe."""
    a, b = pbsim.contact_query(m, scene, q), pbsim.contact_query(m, scene, qe)
    on = b["d"][0] > 0
    dx = b["X"][0] - a["X"][0]
    nk = a["n"][0]
    u = dx - (dx * nk).sum(axis=1, keepdims=True) * nk
    assert on.sum() >= 3 and np.linalg.norm(u[on], axis=1).min() > 1e-3
    return b["d"][0][on]


def test_derivatives_box_on_plane():
    """Measured: r 2.6e-9, J_r 7e-12, grad GE 7.9e-9 (FD noise at eps = 1e-6); J_r asymmetry 4 %
    (friction at 6 points in contact, depths 2-18 mm)."""
    m = box_model()
    scene = pbsim.make_scene(m, ground="plane", mu=0.5)
    I = make("pbfd", m, scene, c_friction=3e6)  # friction ~ the normal force at these depths
    q, v, qe = _box_state(m)
    _check_contact(m, scene, q, qe)
    er, eJ, eg, asym = _fd(I, q, v, qe, 0.02)
    assert er < 1e-6 and eJ < 1e-6 and eg < 1e-6, (er, eJ, eg)
    assert asym > 1e-2  # friction's block: J_r is not symmetric


def test_derivatives_chain_on_plane():
    """An articulated case: a 4-link revolute chain with its capsule points pressed into a plane
    (the point-Hessian contraction d(J^T f)/dq through the joints).  Measured: see the assert."""
    m = pbsim_models.chain(4)
    scene = pbsim.make_scene(m, ground="plane", ground_height=-0.22, mu=0.5)
    I = make("pbfd", m, scene, c_friction=5e8)
    q = np.array([1.2, 0.4, -0.3, 0.5])
    v = np.array([0.5, -0.8, 1.0, -0.6])
    qe = q + 0.02 * v + np.array([0.01, -0.01, 0.02, 0.0])
    _check_contact(m, scene, q, qe)
    er, eJ, eg, asym = _fd(I, q, v, qe, 0.02)
    assert er < 1e-6 and eJ < 1e-6 and eg < 1e-6, (er, eJ, eg)
    assert asym > 1e-3


def test_derivatives_box_on_heightfield():
    """A heightfield whose cells are planar (a ridge h = 0.2 |x| + 0.05 y, kink on a grid line):
    the facets' normals differ, the tangent plane is frozen at the start of the step, the
    normal's change dn/dx is zero inside a cell -- what PBFD does not differentiate
    (pbsim.contact.pbfd) is absent, so the derivatives must be exact.  The box straddles the
    ridge (points on both facets)."""
    xs = np.linspace(-1, 1, 41)
    X, Y = np.meshgrid(xs, xs, indexing="ij")
    hf = HeightField(0.2 * np.abs(X) + 0.05 * Y, (-1, 1, -1, 1))
    m = box_model()
    scene = pbsim.make_scene(m, ground=None, environment=[hf], mu=0.5)
    I = make("pbfd", m, scene, c_friction=3e6)
    q, v, qe = _box_state(m, x0=0.0)
    for a in (q, qe):
        a[2] += 0.012  # the ridge lifts the middle: keep the depths at a few mm
    d = _check_contact(m, scene, q, qe)
    X = pbsim.contact_query(m, scene, qe)["X"][0]
    on = pbsim.contact_query(m, scene, qe)["d"][0] > 0
    assert (X[on, 0] > 0).any() and (X[on, 0] < 0).any() and d.max() < 0.03  # both facets
    er, eJ, eg, asym = _fd(I, q, v, qe, 0.02)
    assert er < 1e-6 and eJ < 1e-6 and eg < 1e-6, (er, eJ, eg)
    assert asym > 1e-2


# ---------------------------------------------------------------------------------------------
# A-T2: without contact PBFD is PBAD


def test_no_contact_equals_pbad():
    """Fixed-base 10-link chain (ball2 joints, 20 DOF) released horizontally, dt = 0.05, 200
    steps, no contact: Eq. 13 is Eq. 6 (r = grad E), and pbfd (JTJ-LM on GE) follows pbad (LM on
    E) to max |dq| <= 1e-6 at every step with the default tolerances (measured 9.6e-8)."""
    m = pbsim_models.chain(10, joint="ball2")
    A, B = make("pbad", m), make("pbfd", m)
    sa, sb = State.make(m), State.make(m)
    worst = 0.0
    for _ in range(200):
        sa, _da = A.step(sa, None, 0.05)
        sb, db = B.step(sb, None, 0.05)
        assert db.converged.all() and not db.extra["stalled"].any()
        worst = max(worst, np.abs(sa.q - sb.q).max())
    assert worst <= 1e-6, worst


# ---------------------------------------------------------------------------------------------
# a box on a plane: rest depth, sliding, convergence


@pytest.fixture(scope="module")
def box():
    m = box_model()
    return m, pbsim.make_scene(m, ground="plane", mu=0.5)


def _run(I, q0, v0, dt, T):
    """Steps of the box over [0, T]: final state, max penetration, diagnostics arrays."""
    s = State.make(I.model, q0, v=v0)
    pen, res, conv, its = 0.0, [], [], []
    for _ in range(int(round(T / dt))):
        s, d = I.step(s, None, dt)
        pen = max(pen, float(d.penetration[0]))
        res.append(d.residual[0])
        conv.append(d.converged[0] and not d.extra["stalled"][0])
        its.append(d.iterations[0])
        assert not d.nan[0]
    return s, pen, np.array(res), np.array(conv), np.array(its)


@pytest.mark.parametrize("dt", [0.01, 0.1])
def test_box_rests_where_c_normal_d2_carries_its_weight(box, dt):
    """Dropped from 5 cm, the box rests on its 8 bottom points at the depth where 8 C_perp d^2 =
    M g: d = delta_ref / sqrt(2) = 3.5355 mm with the default C_perp = M g / (4 delta_ref^2)
    (measured to 1e-9), and at the same rule with C_perp 4x larger (d halves)."""
    m, scene = box
    q0 = m.neutral()
    q0[2] = HALF + 0.05
    for cn in (None, 4 * 9.81 / (4 * 0.005**2)):
        I = make("pbfd", m, scene, c_normal=cn)
        s, pen, res, conv, _ = _run(I, q0, None, dt, 3.0)
        d = np.sqrt(9.81 / (8 * I.c_normal))
        assert abs((HALF - s.q[0, 2]) - d) < 1e-7, (HALF - s.q[0, 2], d)
        assert np.abs(s.q[0, :2]).max() < 1e-9 and np.linalg.norm(s.v[0]) < 1e-5
        assert pen < 0.02 and conv.all()


def _reference(c, dt, T, v0=1.0):
    """The note's A-T4 recursion: v_k+1 = (sqrt(1 + 4 c dt v_k) - 1) / (2 c dt), distance
    sum dt v_k+1, with c = 2 (C_par / C_perp) g dt^2 (mu_eff = 2 (C_par / C_perp) dt^2 v^2)."""
    v, x = v0, 0.0
    for _ in range(int(round(T / dt))):
        v = (np.sqrt(1 + 4 * c * dt * v) - 1) / (2 * c * dt) if c > 0 else v
        x += dt * v
    return x


CPAR = (1e4, 1e5, 1e6, 1e7, 1e8)


@pytest.fixture(scope="module")
def sliding(box):
    """The box slides from rest depth at 1 m/s for 5 s, at dt 0.01, 0.05, 0.1 and five C_par."""
    m, scene = box
    q0 = m.neutral()
    q0[2] = HALF - 0.005 / np.sqrt(2)
    v0 = np.array([1.0, 0, 0, 0, 0, 0])
    out = {}
    for dt in (0.01, 0.05, 0.1):
        for cf in CPAR:
            I = make("pbfd", m, scene, c_friction=cf)
            s, pen, res, conv, its = _run(I, q0, v0, dt, 5.0)
            c = 2 * cf / I.c_normal * 9.81 * dt * dt
            out[dt, cf] = dict(
                x=s.q[0, 0], ref=_reference(c, dt, 5.0), pen=pen, res=res, conv=conv, its=its, scale=I.energy_scale
            )
    return out


def test_sliding_distance_decreases_with_c_friction(sliding):
    """Fig. 5(b) for PBFD: at every dt the distance at 5 s is non-increasing in C_par, and it
    follows the A-T4 recursion within 5 % (measured: within 0.02 % up to C_par = 1e7, 1.2 % at
    1e8 where the box also pitches); the box never sinks more than 2 cm (measured <= 5.7 mm)."""
    for dt in (0.01, 0.05, 0.1):
        x = np.array([sliding[dt, cf]["x"] for cf in CPAR])
        assert np.all(np.diff(x) <= 1e-4), (dt, x)
        assert x[0] > 4.5 and x[-1] < 1.5, (dt, x)  # from nearly free sliding to a short stop
        for cf in CPAR:
            r = sliding[dt, cf]
            assert abs(r["x"] - r["ref"]) <= 0.05 * r["ref"], (dt, cf, r["x"], r["ref"])
            assert r["pen"] < 0.02


def test_converges_on_the_residual(sliding):
    """A-T3: >= 99 % of the steps end with |r|_inf <= 1e-6 of the energy scale (M g x 1 m) without
    stalling (measured: all 3250, max |r|_inf 9.6e-9 N, median 1.9e-12 N; 1.7 JTJ-LM iterations a step)."""
    res = np.concatenate([r["res"] for r in sliding.values()])
    conv = np.concatenate([r["conv"] for r in sliding.values()])
    scale = next(iter(sliding.values()))["scale"]
    ok = conv & (res <= 1e-6 * scale)
    assert ok.mean() >= 0.99, (ok.mean(), res.max())


def test_lbfgs_follows_lm(box):
    """LBFGS on GE reaches the roots JTJ-LM reaches (box landing and sliding, dt = 0.05), with
    more iterations (the paper's Fig. 4)."""
    m, scene = box
    q0 = m.neutral()
    q0[2] = HALF + 0.05
    v0 = np.array([1.0, 0, 0, 0, 0, 0])
    a = _run(make("pbfd", m, scene, c_friction=1e6), q0, v0, 0.05, 2.0)
    b = _run(make("pbfd", m, scene, c_friction=1e6, optimizer="lbfgs"), q0, v0, 0.05, 2.0)
    assert np.abs(a[0].q - b[0].q).max() < 1e-6
    assert b[3].all() and b[4].mean() > 2 * a[4].mean()


def test_stalled_steps_are_substepped(box):
    """A step whose solver stops with r != 0 (here: an iteration cap of 2 on a box landing at dt =
    0.1) is redone as half steps, counted in Diagnostics.extra; the sub-stepped run still lands
    and rests at the rule's depth."""
    m, scene = box
    q0 = m.neutral()
    q0[2] = HALF + 0.05
    I = make("pbfd", m, scene, max_iterations=2, substep=4)
    s = State.make(m, q0)
    stalled, substeps = 0, 0
    for _ in range(30):
        s, d = I.step(s, None, 0.1)
        stalled += int(d.extra["stalled"][0])
        substeps = max(substeps, int(d.extra["substeps"][0]))
        assert d.extra["substeps"][0] == 1 or d.extra["stalled"][0]
    assert stalled > 0 and substeps > 1
    assert abs((HALF - s.q[0, 2]) - 0.005 / np.sqrt(2)) < 1e-6


# ---------------------------------------------------------------------------------------------
# options, batch driver, friction_for_mu


@pytest.mark.parametrize(
    "opts",
    [
        dict(c_normal=-1.0),
        dict(c_normal=float("nan")),
        dict(c_friction=-5.0),
        dict(c_friction=float("inf")),
        dict(alpha=1.0),
        dict(alpha=0.5),
        dict(beta=0.0),
        dict(gamma=-1.0),
        dict(alpha=float("nan")),
        dict(rtol=0.0),
        dict(max_iterations=0),
        dict(substep=-1),
        dict(optimizer="newton"),
        dict(c_normal="stiff"),
        dict(c_frction=1.0),
    ],
)
def test_bad_options_raise(box, opts):
    m, scene = box
    with pytest.raises(InputError):
        make("pbfd", m, scene, **opts)


def _converged_unstalled(d):
    return d.converged.all() and not d.extra["stalled"].any()


def check_cpu_batch(box, method, c_friction, other_optimizer):
    """CpuBatch(method) equals the integrator's steps bit for bit (3 boxes of half size HALF landing
    while sliding at 0.2, 1 and 2 m/s, 20 steps of 0.05 s, every step converged and not stalled),
    and refuses an optimizer other than LM."""
    m, scene = box
    q0 = np.tile(m.neutral(), (3, 1))
    q0[:, 2] = HALF + 0.02
    v0 = np.zeros((3, 6))
    v0[:, 0] = [0.2, 1.0, 2.0]
    batch_equals_step(method, m, scene, q0, v0, 20, 0.05, _converged_unstalled, c_friction=c_friction)
    with pytest.raises(InputError, match="optimizer='lm' only"):
        CpuBatch(m, method, scene=scene, batch=2, optimizer=other_optimizer)


def test_cpu_batch_equals_integrator_step(box):
    """CpuBatch('pbfd') (the generic batch driver on the same step kernel) gives the integrator's
    steps bit for bit: 3 boxes landing while sliding at different speeds, dt = 0.05."""
    check_cpu_batch(box, "pbfd", 1e6, "lbfgs")


def test_friction_for_mu(box):
    """The rule: with C_par = friction_for_mu(mu, dt, v_ref=...) the friction over the weight is
    mu (v / v_ref)^2.  A box sliding from 1 m/s with v_ref = 1 m/s decelerates, once its pitch has
    settled (the elastic normal contact lets the bottom points lag the centre in the first steps),
    at mu g (v / v_ref)^2 (v: the step's mean velocity; measured within 0.7 % over steps 15-40, 0.26 % at the end);
    the default c_friction (None) is this rule with the scene's mu, v_ref = 0.1 m/s, at the
    step's dt; C_par scales as dt^-2 with the default exponents."""
    m, scene = box
    dt, mu = 0.01, 0.5
    assert pbsim.friction_for_mu is friction_for_mu
    cf = friction_for_mu(mu, dt, m)
    I = make("pbfd", m, scene)
    assert I.friction_at(dt) == pytest.approx(cf, rel=1e-12)
    assert friction_for_mu(mu, 2 * dt, m) == pytest.approx(cf / 4, rel=1e-12)
    assert friction_for_mu(mu, dt, c_normal=I.c_normal) == pytest.approx(cf, rel=1e-12)
    assert friction_for_mu(mu, dt, m, v_ref=1.0) == pytest.approx(cf / 100, rel=1e-12)
    I = make("pbfd", m, scene, c_friction=friction_for_mu(mu, dt, m, v_ref=1.0))
    q0 = m.neutral()
    q0[2] = HALF - 0.005 / np.sqrt(2)
    s = State.make(m, q0, v=np.array([1.0, 0, 0, 0, 0, 0]))
    x = [s.q[0, 0]]
    for _ in range(41):
        s, d = I.step(s, None, dt)
        x.append(s.q[0, 0])
    v = np.diff(x) / dt  # mean velocity of each step
    a = -np.diff(v)[15:] / dt
    rule = mu * 9.81 * v[16:] ** 2
    assert np.abs(a / rule - 1).max() < 1e-2, np.abs(a / rule - 1).max()
    with pytest.raises(InputError):
        friction_for_mu(0.5, 0.01)  # neither model nor c_normal
    with pytest.raises(InputError):
        friction_for_mu(-0.5, 0.01, m)


def test_pbfd_step_on_cuda_backend_cudasim(tmp_path):
    """The step kernel through the CUDA backend (CudaBatch, the cuda_twin of pbfd_step; numba's CUDA
    simulator in a subprocess) equals the CPU integrator's step, JTJ-LM iterations included, with
    both schedules (whole steps in the kernel; one LM iteration per launch, paper 003 Fig. 3):
    boxes sliding on two facets of a heightfield (_cudasim_pbfd.py; measured: identical).  The
    in-kernel sub-step fallback (issue 30) on the CUDA twin too: with an iteration cap of 2 every
    step stalls and is redone as halves, the same sub-steps as the CPU; the per-launch schedule,
    which has no fallback, refuses the default substep by name."""
    diffs, out = run_cudasim_twin(Path(__file__).with_name("_cudasim_pbfd.py"), tmp_path / "pbfd_cpu.npz")
    assert set(diffs) == {"q", "v", "e", "q_launch", "v_launch", "e_launch", "q_fallback", "v_fallback",
                          "e_fallback"}, out  # fmt: skip
    assert max(diffs.values()) <= 1e-10, diffs
    assert "ITER same" in out and "ITER_launch same" in out and "ITER_fallback same" in out, out
    assert "SUBSTEPS same" in out and "REFUSED launch" in out and "ROLLOUT_FALLBACK same" in out, out
