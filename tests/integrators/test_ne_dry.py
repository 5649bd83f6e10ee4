"""``ne_dry`` (Newton-Euler + Coulomb dry friction, Stewart-Trinkle LCP by Lemke): the sliding box
stops after v0^2 / (2 mu g), a box on a 30 deg incline sticks when mu > tan 30 and slides at
g (sin - mu cos) otherwise, a resting or dropped box neither sinks nor drifts, bad options are
InputErrors, the batch driver runs the same kernel, and without contact it is semi-implicit Euler."""

import numpy as np
import pytest

import pbsim
import pbsim_models
from conftest import batch_equals_step, euler_steps_without_contact
from pbsim.contact import Plane, Scene, make_scene, sample_contact_points
from pbsim.control import Control
from pbsim.errors import InputError
from pbsim.integrators import State, make
from pbsim_models.parts import floating_chain, free_box as box

G = 9.81
DT = 1e-3


def run(integ, s, steps, dt=DT):
    out = [s.q[0].copy()]
    for _ in range(steps):
        s, d = integ.step(s, None, dt)
        assert d.converged.all() and not d.nan.any()
        out.append(s.q[0].copy())
    return s, d, np.array(out)


@pytest.mark.parametrize("mu", [0.1, 0.25, 0.5, 1.0])
def test_sliding_box_stops_after_v0_squared_over_2_mu_g(mu):
    m = box()
    integ = make("ne_dry", m, make_scene(m, mu=mu))
    q0 = m.neutral()
    q0[2] = 0.05  # resting on the plane
    v0 = 1.0
    want = v0 * v0 / (2 * mu * G)
    s, d, qs = run(integ, State.make(m, q0, np.r_[v0, 0, 0, 0, 0, 0]), int((v0 / (mu * G) + 0.1) / DT))
    dist = qs[-1, 0] - q0[0]
    assert abs(dist - want) < 0.05 * want  # measured: 1.0 % (mu = 1) to 0.1 % (mu = 0.1) short, v0 dt / 2
    assert abs(s.v[0]).max() < 1e-9  # stopped, and stays
    assert abs(qs[-1, 1]) < 1e-9 and abs(qs[-1, 2] - 0.05) < 1e-6  # straight, flat
    assert d.extra["active_contacts"][0] == 8  # the bottom face's 4 corners and 4 edge midpoints


def _incline(mu, deg=30.0):
    m = box()
    a = np.radians(deg)
    n = np.array([-np.sin(a), 0.0, np.cos(a)])  # the plane z = x tan(a): uphill is +x
    sc = Scene(environment=[Plane(n, 0.0)], points=sample_contact_points(m), mu=mu)
    q0 = m.neutral()
    q0[:3] = 0.05 * n  # the bottom face on the plane
    q0[3:7] = [np.cos(a / 2), 0.0, -np.sin(a / 2), 0.0]  # tilted with the plane (local z = n)
    down = -np.array([np.cos(a), 0.0, np.sin(a)])
    return m, make("ne_dry", m, sc), q0, n, down, a


def test_incline_sticks_when_mu_exceeds_tan30():
    m, integ, q0, n, down, a = _incline(0.8)
    assert 0.8 > np.tan(a)
    s, d, qs = run(integ, State.make(m, q0), 1000)
    creep = np.abs((qs[:, :3] - q0[:3]) @ down).max()
    assert creep < 1e-3  # measured: 0 (to round-off)
    assert np.abs((qs[:, :3] - q0[:3]) @ n).max() < 1e-6  # nor sinks


@pytest.mark.parametrize("mu", [0.0, 0.3, 0.5])
def test_incline_slides_at_g_sin_minus_mu_cos(mu):
    m, integ, q0, n, down, a = _incline(mu)
    want = G * (np.sin(a) - mu * np.cos(a))
    steps = 500
    s, d, qs = run(integ, State.make(m, q0), steps)
    t = DT * np.arange(steps + 1)
    x = (qs[:, :3] - q0[:3]) @ down
    acc = 2 * np.polyfit(t, x, 2)[0]
    assert abs(acc - want) < 0.05 * want  # measured: exact to 1e-9 relative
    assert np.abs((qs[:, :3] - q0[:3]) @ n).max() < 1e-6  # on the plane all along


def test_resting_and_dropped_boxes_do_not_sink_or_drift():
    m = box()
    integ = make("ne_dry", m, make_scene(m, mu=0.8))
    q0 = m.neutral()
    q0[2] = 0.05
    s, d, qs = run(integ, State.make(m, q0), 1000)
    assert 0.05 - qs[:, 2].min() < 0.02 and 0.05 - qs[:, 2].min() < 1e-9  # measured: 0
    assert np.abs(qs[:, :2]).max() < 1e-9 and np.abs(s.v).max() < 1e-9
    assert d.penetration[0] < 1e-9
    # dropped from 0.25 m tilted and spinning: lands on a corner, settles on its face, no sinking
    q0 = m.neutral()
    q0[2] = 0.3
    quat = np.array([0.9, 0.3, 0.2, 0.1])
    q0[3:7] = quat / np.linalg.norm(quat)
    s = State.make(m, q0, np.array([0.5, 0.2, 0.0, 1.0, -2.0, 3.0]))
    worst = 0.0
    for _ in range(2500):
        s, d = integ.step(s, None, DT)
        assert d.converged.all()
        worst = max(worst, d.penetration[0])
    assert worst < 0.02  # measured: 0 (to round-off)
    assert abs(s.q[0, 2] - 0.05) < 1e-6 and np.abs(s.v).max() < 1e-6  # at rest on its face
    q1 = s.q.copy()
    s, d, qs = run(integ, s, 200)
    assert np.abs(qs - q1).max() < 1e-9  # and stays there


def test_bad_options_are_input_errors():
    m = box()
    sc = make_scene(m)
    for bad in (
        dict(mu=-0.1),
        dict(mu=float("nan")),
        dict(margin=-1e-3),
        dict(margin=float("inf")),
        dict(baumgarte=1.5),
        dict(baumgarte=-0.1),
        dict(max_iterations=0),
        dict(mu="high"),
        dict(max_iterations=2.5),
        dict(lemke_pivots=10),
    ):
        with pytest.raises(InputError):
            make("ne_dry", m, sc, **bad)
    integ = make("ne_dry", m, sc, mu=None, margin=0.0, baumgarte=0.0, max_iterations=50)
    assert integ.mu == sc.mu and integ.margin == 0.0 and integ.max_iterations == 50


def test_cpubatch_runs_the_same_kernel():
    m = box()
    sc = make_scene(m, mu=0.4)
    q0 = np.tile(m.neutral(), (2, 1))
    q0[:, 2] = [0.05, 0.12]
    v0 = np.array([[1.0, 0.3, 0, 0, 0, 0.5], [0.2, -0.4, -1.0, 0.3, 0.0, 0.0]])
    d, info = batch_equals_step("ne_dry", m, sc, q0, v0, 40, DT, mu=0.4)
    assert (info[:, 3] == d.extra["active_contacts"]).all()


def test_without_contact_it_is_semi_implicit_euler():
    """No scene: M^-1 by dense Cholesky instead of ABA, the same step (stable PD, damping)."""
    euler_steps_without_contact("ne_dry")


def test_effort_clamping_active_set():
    """Stable PD with effort limits: a numpy step with the explicit integrators' active set
    (saturated joints fixed at +-effort, explicit; the others implicit) is the reference."""
    model = pbsim_models.chain(4, damping=0.05)
    model.effort_limit[:] = 0.05  # N m: the SPD torque toward -0.5 rad saturates
    kp, kd, qref, dt = 50.0, 2.0, np.full(4, -0.5), 0.01
    ctl = Control(mode="spd", kp=kp, kd=kd, q_ref=qref, clamp=True)
    ne = make("ne_dry", model)
    s = State.make(model, np.array([0.4, -0.3, 0.2, 0.1]))
    q, v = s.q[0].copy(), s.v[0].copy()
    saturated = 0
    for _ in range(100):
        s, _ = ne.step(s, ctl, dt)
        M = pbsim.crba(model, q)
        h = pbsim.rnea(model, q, v, np.zeros(4))
        Q = -kp * (q + dt * v - qref) - kd * v  # SPD's explicit part (linear prediction)
        tau = Q - model.damping * v - h
        diag = np.full(4, dt * kd) + dt * model.damping
        free = np.ones(4, bool)
        for _it in range(5):
            qdd = np.linalg.solve(M + np.diag(diag), tau)
            over = free & (np.abs(Q - dt * kd * qdd) > 0.05)
            if not over.any():
                break
            cl = np.sign(Q - dt * kd * qdd) * 0.05
            tau[over] += cl[over] - Q[over]
            diag[over] -= dt * kd
            Q[over] = cl[over]
            free &= ~over
        saturated += (~free).sum()
        v = v + dt * qdd
        q = q + dt * v
        assert np.allclose(s.q[0], q, atol=1e-9) and np.allclose(s.v[0], v, atol=1e-9)
    assert saturated > 100  # the limits were hit


def test_floating_chain_lands_on_the_plane():
    """A 10-link chain (2-DOF joints) dropped on the plane: every step's LCP solved, no sinking."""
    model = floating_chain(10)
    sc = make_scene(model, mu=0.6)
    integ = make("ne_dry", model, sc)
    q0 = model.neutral()
    q0[2] = 0.05
    v0 = np.zeros(model.nv)
    v0[0], v0[2], v0[6:] = 0.5, -0.5, 0.5 * np.sin(np.arange(model.nv - 6))
    s = State.make(model, q0, v0)
    worst = 0.0
    for _ in range(300):
        s, d = integ.step(s, None, DT)
        assert d.converged.all() and np.isfinite(s.q).all()
        worst = max(worst, d.penetration[0])
    assert worst < 0.02 and d.extra["active_contacts"][0] == len(sc.points.body)


def test_energy_is_dissipated_by_sliding():
    m = box()
    integ = make("ne_dry", m, make_scene(m, mu=0.5))
    q0 = m.neutral()
    q0[2] = 0.05
    s = State.make(m, q0, np.r_[1.0, 0.5, 0, 0, 0, 2.0])
    e0 = pbsim.energy(m, s.q, s.v).sum()
    last = e0
    for _ in range(300):
        s, d = integ.step(s, None, DT)
        assert d.energy[0] <= last + 1e-12
        last = d.energy[0]
    assert last < e0
