"""Variational integrator (paper 004): DEL satisfied along its trajectories, bounded energy,
momentum conservation, agreement of RIQN / Newton / Broyden, reported non-convergence."""

import warnings

import numpy as np
import pytest

import pbsim_models
from pbsim.control.control import Control
from pbsim.dynamics.drnea import drnea
from pbsim.dynamics.kinematics import velocity_pass, world_pass
from pbsim.dynamics.workspace import make_work
from pbsim.errors import InputError, SimulationError
from pbsim.integrators.base import State, available, make

DT = 1e-3


def run(name, model, q0, steps, dt=DT, v0=None, control=None, **opts):
    """Trajectory by one compiled rollout call: q (steps+1, nq) incl. q0, energy, iterations."""
    integ = make(name, model, on_fail="raise", **opts)
    s = State.make(model, q=q0, v=v0)
    s, qo, vo, E, its = integ.rollout(s, control, dt, steps)
    return np.vstack([np.atleast_2d(q0), qo[0]]), E[0], its[0], s


def test_registered():
    names = available()
    for n in ("variational", "variational_newton", "variational_broyden"):
        assert n in names


@pytest.mark.parametrize("joint", ["revolute", "spherical"])
def test_trajectory_satisfies_del(joint):
    model = pbsim_models.chain(5, joint)
    q0 = model.random_configuration(3) if joint == "spherical" else np.full(5, 0.4)
    tau = np.linspace(-3e-3, 4e-3, model.nv)  # constant torque: F^+_k-1 + F^-_k = dt tau
    qs, E, its, _ = run("variational", model, q0, 60, control=Control(tau=tau))
    f = drnea(model, qs[:-2], qs[1:-1], qs[2:], DT, tau)
    scale = np.abs(drnea(model, qs[:-2], qs[1:-1], qs[1:-1], DT)).max()  # momentum-sized impulse
    assert scale > 1e-5
    assert np.abs(f).max() < 1e-8 * scale
    assert its.mean() < 10


def test_newton_broyden_riqn_same_trajectory():
    model = pbsim_models.chain(4)
    q0 = np.array([0.5, -0.3, 0.2, 0.1])
    qr, Er, itr, _ = run("variational", model, q0, 40)
    qn, En, itn, _ = run("variational_newton", model, q0, 40)
    qb, Eb, itb, _ = run("variational_broyden", model, q0, 40)
    assert np.abs(qr - qn).max() < 1e-10 and np.abs(qr - qb).max() < 1e-10
    assert itn.mean() <= itr.mean()  # quadratic vs linear convergence (paper Fig. 4)


def test_energy_bounded_while_euler_drifts():
    """Paper 004 Fig. 2b in small: 10-link chain under gravity, 1000 steps at 1 ms (the 1e5-step
    version is scripts/figures/fig_variational_energy.py).  Variational: O(dt^2) bounded error (measured
    7.8e-4 J at 1 ms, 3.1e-3 J at 2 ms); semi-implicit Euler gains 0.27 J in 1 s."""
    model = pbsim_models.chain(10)
    q0 = np.zeros(10)
    _, Ev, _, _ = run("variational", model, q0, 1000)
    s = State.make(model, q=q0)
    eu = make("euler", model)
    for _ in range(1000):
        s, d = eu.step(s, None, DT)
    E0 = Ev[0]
    dv = np.abs(Ev - E0).max()
    assert dv < 2e-3
    assert abs(d.energy[0] - E0) > 50 * dv


def test_rollout_matches_steps():
    """The multi-step kernel is the same integrator as step() (spherical chain with damping + PD)."""
    model = pbsim_models.chain(3, "spherical", damping=0.02)
    rng = np.random.default_rng(4)
    s0 = State.make(model, q=model.random_configuration(rng), v=0.3 * rng.normal(size=model.nv))
    ctl = Control(mode="pd", kp=2e-3, kd=1e-4, q_ref=model.random_configuration(rng))
    integ = make("variational", model, on_fail="raise")
    s = s0
    for _ in range(7):
        s, _ = integ.step(s, ctl, DT)
    sr, qo, vo, E, its = integ.rollout(s0, ctl, DT, 7, every=3)
    assert qo.shape == (1, 2, model.nq) and its.shape == (1, 7)
    assert np.abs(sr.q - s.q).max() < 1e-12 and np.abs(sr.v - s.v).max() < 1e-10
    assert np.abs(sr.t - s.t) < 1e-15


def test_forcing_split_no_velocity_bias():
    """F^- = F^+ = Q/2: under a constant torque (no gravity) one revolute joint gets q = tau t^2 / 2I and
    v = tau t / I exactly; with all of Q in F^- (F^+ = 0) q is off by tau dt t / 2I.  At an SPD +
    gravity equilibrium the returned velocity is zero (it was dt/2 M^-1 Q with F^+ = 0)."""
    from pbsim.dynamics import api

    model = pbsim_models.chain(1)
    model.gravity[:] = 0.0
    inertia = float(np.ravel(api.crba(model, np.zeros(1)))[0])
    tau = 0.5 * inertia
    qs, _, _, s = run("variational", model, np.zeros(1), 100, dt=0.01, control=Control(tau=np.array([tau])))
    t = 0.01 * np.arange(101)
    assert np.abs(qs[:, 0] - 0.5 * tau / inertia * t**2).max() < 1e-9
    assert abs(s.v[0, 0] - tau / inertia * 1.0) < 1e-9
    model = pbsim_models.chain(2)
    ctl = Control(mode="spd", kp=20.0, kd=2.0, q_ref=np.array([-0.5, 0.3]))
    qs, _, _, s = run("variational", model, np.zeros(2), 1500, dt=0.01, control=ctl)
    assert np.abs(qs[-1] - qs[-2]).max() < 1e-9 and np.abs(qs[-1] - [-0.5, 0.3]).max() < 0.3
    assert np.abs(s.v).max() < 1e-7  # dt/2 M^-1 Q would be ~1e-2 here


def spatial_momentum_world(model, q, v):
    w = make_work(model, 1)
    velocity_pass(model.k, w, 0, q, v)
    world_pass(model.k, w, 0)
    tot = np.zeros(6)
    for i in range(model.nb):
        h = model.inertia[i] @ w.vel[0, i]
        R, p = w.Rw[0, i], w.pw[0, i]
        lin = R @ h[3:]
        tot += np.r_[R @ h[:3] + np.cross(p, lin), lin]
    return tot


def test_free_floating_momentum_conserved():
    model = pbsim_models.snake(9)
    model.gravity[:] = 0.0
    rng = np.random.default_rng(5)
    s = State.make(model, q=model.random_configuration(rng), v=rng.normal(size=model.nv))
    h0 = spatial_momentum_world(model, s.q[0], s.v[0])
    _, qo, vo, _, _ = make("variational", model, tol=1e-13, on_fail="raise").rollout(s, None, DT, 200, every=20)
    err = max(np.abs(spatial_momentum_world(model, q, v) - h0).max() for q, v in zip(qo[0], vo[0]))
    assert np.abs(h0).max() > 1e-3
    assert err < 1e-9 * np.abs(h0).max()


def test_damping_dissipates():
    model = pbsim_models.chain(3, damping=0.05)
    _, E, _, _ = run("variational", model, np.array([0.5, 0.2, -0.1]), 300)
    assert np.all(np.diff(E) < 1e-12) and E[-1] < E[0] - 1e-4


def test_nonconvergence_reported_never_silent():
    model = pbsim_models.chain(3)
    s = State.make(model, q=np.array([1.0, 0.5, 0.2]), v=np.array([3.0, -2.0, 1.0]))
    integ = make("variational", model, max_iter=1, ig=1, tol=1e-14)
    with pytest.warns(RuntimeWarning, match="did not converge"):
        _, d = integ.step(s, None, 0.01)
    assert not d.converged[0] and d.iterations[0] == 1 and d.residual[0] > 0
    with pytest.raises(SimulationError):
        make("variational", model, max_iter=1, ig=1, tol=1e-14, on_fail="raise").step(s, None, 0.01)
    with pytest.warns(RuntimeWarning, match="rollout: 2 of 2 steps did not converge"):
        make("variational", model, max_iter=1, ig=1, tol=1e-14).rollout(s, None, 0.01, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _, d = make("variational", model).step(s, None, 0.01)
    assert d.converged[0]


def test_bad_options():
    model = pbsim_models.chain(2)
    for kw in ({"method": "lbfgs"}, {"ig": 4}, {"tol": -1.0}, {"max_iter": 0}, {"on_fail": "x"}):
        with pytest.raises(InputError):
            make("variational", model, **kw)
    with pytest.raises(InputError, match="steps"):
        make("variational", model).rollout(State.make(model), None, DT, 0)


@pytest.mark.parametrize("tol", [1e-12, 1e-6])
def test_velocity_is_discrete_legendre_transform(tol):
    """The returned v_k+1 satisfies M(q_k+1) v_k+1 = D2 Ld(q_k, q_k+1) + F^+_k at the returned q_k+1,
    with D2 Ld from DRNEA: drnea(q_k, q_k+1, q_k+1) = -D2 Ld(q_k, q_k+1) + dt/2 g(q_k+1) - arm d_k / dt
    (D1 Ld(q, q) is the potential's half impulse only).  The step reuses the last iteration's DRNEA
    pass plus a first-order correction; at a loose tol (1e-6) dropping the correction gives ~1e-4
    relative error, so the bound 1e-7 tests it.  Damping checks the F^+ = -damping d_k / 2 term."""
    from pbsim.dynamics import api

    model = pbsim_models.chain(4, damping=0.01)
    s = State.make(model, q=np.array([0.5, -0.3, 0.2, 0.1]), v=np.array([1.0, -2.0, 0.5, 3.0]))
    integ = make("variational", model, on_fail="raise", tol=tol)
    for _ in range(3):  # a few steps so the rollout's reuse path (p_k, factor of M(q_k)) is exercised too
        q0 = s.q[0].copy()
        s, d = integ.step(s, None, DT)
        q1, v1 = s.q[0], s.v[0]
        dk = api.difference(model, q0, q1)
        p = (
            -drnea(model, q0, q1, q1, DT)
            + 0.5 * DT * api.rnea(model, q1, np.zeros(4), np.zeros(4))
            + model.armature * dk / DT
            - 0.5 * model.damping * dk
        )
        Mv = api.crba(model, q1) @ v1 + model.armature * v1
        assert np.abs(Mv - p).max() < 1e-7 * np.abs(p).max() + 1e-14
    sr, _, vo, _, _ = integ.rollout(
        State.make(model, q=np.array([0.5, -0.3, 0.2, 0.1]), v=np.array([1.0, -2.0, 0.5, 3.0])), None, DT, 3
    )
    assert np.abs(sr.v - s.v).max() < 1e-7 * np.abs(s.v).max()
