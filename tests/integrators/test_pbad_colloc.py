"""High-order PBAD (paper 000 Sec. 4.1, Eq. 6-7): collocation weights, residual order at the
nodes, velocity/energy order, the carried previous node, and the aliasing guard."""

import numpy as np
import pytest

import pbsim
import pbsim_models
from pbsim.integrators import State, make
from pbsim.integrators.pbad import collocation_nodes, lagrange_derivatives


@pytest.mark.parametrize("K", [3, 4])
def test_lagrange_weights_exact_on_polynomials(K, rng):
    """H' and H'' of Eq. 6 against an independent Vandermonde construction and exactness on degree-K
    polynomials; pbad3's rows are the textbook formulas (h = dt/2): central difference at alpha = 1/2,
    backward (-1, 4, -5, 2)/h^2 at alpha = 1."""
    tau = collocation_nodes(K)
    assert len(tau) == K + 1 and tau[1] == 0.0 and tau[-1] == 1.0
    roots = np.sort((np.polynomial.legendre.legroots([0] * (K - 2) + [1]) + 1) / 2)
    assert np.allclose(tau[2:-1], roots)  # alpha_1..alpha_{K-2}: roots of L_{K-2}(2 alpha - 1)
    assert np.isclose(tau[0], roots[-1] - 1.0)
    C1, C2 = lagrange_derivatives(tau)
    Hinv = np.linalg.inv(np.vander(tau, K + 1, increasing=True))  # columns: coefficients of L_j
    for u, t in enumerate(tau):
        d1 = np.array([sum(p * Hinv[p, j] * t ** (p - 1) for p in range(1, K + 1)) for j in range(K + 1)])
        d2 = np.array([sum(p * (p - 1) * Hinv[p, j] * t ** (p - 2) for p in range(2, K + 1)) for j in range(K + 1)])
        assert np.allclose(C1[u], d1, atol=1e-9) and np.allclose(C2[u], d2, atol=1e-8)
    c = rng.normal(size=K + 1)
    P = np.polynomial.Polynomial(c)
    assert np.allclose(C2 @ P(tau), P.deriv(2)(tau), atol=1e-8)
    assert np.allclose(C1 @ P(tau), P.deriv(1)(tau), atol=1e-9)
    if K == 3:
        assert np.allclose(C2[2], [0, 4, -8, 4]) and np.allclose(C2[3], [-4, 16, -20, 8])
        assert np.allclose(C1[3], [-2 / 3, 3, -6, 11 / 3])


def _exact_nodes(model, integ, q0, dt, t0=0.1):
    """Nodes of one step at t_k = t0 taken from an accurate RK4 solution (fine step)."""
    h = 1e-5
    out = []
    for t in t0 + integ.tau * dt:
        n = int(round(t / h))
        out.append(pbsim.rollout(model, "rk4", dt=t / n, steps=n, q0=q0).q[-1])
    return np.array(out)[None]


@pytest.mark.parametrize("name,lo", [("pbad3", 3.0), ("pbad4", 6.0)])
def test_residual_vanishes_at_the_order_on_exact_nodes(name, lo):
    """Eq. 6 on the nodes of the exact motion (2-link ball2 chain falling from a bent pose): the
    residual (inertia from H'' and gravity at each node) shrinks like dt^(K-1) (x4 for pbad3, x8 for
    pbad4 when dt halves).  Wrong weights or forces evaluated off the nodes give O(1) residuals."""
    model = pbsim_models.chain(2, joint="ball2")
    integ = make(name, model)
    q0 = pbsim.integrate(model, model.neutral(), np.array([0.3, 0.2, -0.5, 0.4]))
    res = []
    for dt in (0.02, 0.01):
        r, _ = integ.residual(_exact_nodes(model, integ, q0, dt), dt)
        res.append(np.abs(r).max())
    assert res[0] / res[1] > lo, res


def test_pbad3_energy_error_second_order_and_velocity_from_polynomial():
    """3-link ball2 chain, 0.3 s: pbad3's energy error falls ~4x when dt halves (order 2, as RK2; a
    first-order velocity would give 2x) and v_{k+1} is the end-node derivative of the collocation
    polynomial (C1 row of the last node applied to the stored nodes)."""
    model = pbsim_models.chain(3, joint="ball2")
    q0 = model.neutral()
    e0 = pbsim.energy(model, q0, np.zeros(model.nv)).sum()
    errs = []
    for dt in (0.004, 0.002):
        tr = pbsim.rollout(model, "pbad3", dt=dt, steps=int(round(0.3 / dt)), q0=q0)
        errs.append(np.abs(tr.energy - e0).max())
    assert errs[1] < 5e-3 and 3.0 < errs[0] / errs[1] < 6.0, errs
    integ = make("pbad3", model)
    s = State.make(model, q0)
    dt = 0.01
    s1, _ = integ.step(s, None, dt)
    qprev0 = integ._prev_node(s, dt)  # the node at -dt/2 the first step used (rebuilt: not carried)
    node1 = s1.carry["pbad3"][1]
    assert integ._prev_node(s1, dt) is node1  # carried between steps in the integrator's slot, not rebuilt
    assert np.allclose(s1.q_prev, s.q)  # q_prev means q_k for every method
    fresh = State(s1.q, s1.v, s1.t, s1.q_prev.copy())  # (q, v) set by hand: no carry
    rebuilt = integ._prev_node(fresh, dt)  # rebuilt from (q, v)
    assert rebuilt is not node1
    assert integ._prev_node(State(s1.q, s1.v, s1.t, carry={"pbad3": (2 * dt, node1)}), dt) is not node1  # other dt
    s_half = integ.tau[0] * dt  # -dt/2: q_k (+) (s v + s^2/2 ABA(q, v, 0))
    a = pbsim.aba(model, s1.q, s1.v, np.zeros_like(s1.v))
    assert integ.tau[0] == -0.5
    taylor = pbsim.integrate(model, s1.q, s_half * s1.v + 0.5 * s_half**2 * a)
    assert np.allclose(rebuilt, taylor, rtol=0, atol=1e-12)
    # the Taylor node is the carried one up to O(dt^3): measured 1.7e-6 (vs 7.7e-3 from q_k, 2.0e-3
    # without the acceleration term)
    assert np.linalg.norm(pbsim.difference(model, node1[0], rebuilt[0])) < 2e-5
    s2, d = integ.step(s1, None, dt)
    nodes = [node1[0], s1.q[0], s2.carry["pbad3"][1][0], s2.q[0]]
    v = sum(integ.C1[3, j] * pbsim.difference(model, nodes[3], nodes[j]) for j in range(3)) / dt
    assert np.allclose(s2.v[0], v, atol=1e-10)
    assert np.isclose(d.energy[0], pbsim.energy(model, s2.q[0], s2.v[0]).sum())
    assert qprev0.shape == (1, model.nq)


def test_aliasing_guard_rotation_and_substeps():
    """A node set in which a revolute link turns by 2 pi between nodes looks like rest to the
    Cartesian polynomial: node_rotation sees it; a step whose root exceeds max_rotation is rejected,
    sub-stepped and reported (rejected, substeps, converged False when no level passes)."""
    model = pbsim_models.chain(1, joint="revolute")
    integ = make("pbad3", model)
    nodes = np.array([[[0.0], [0.1], [0.2 + 2 * np.pi], [0.3 + 2 * np.pi]]])
    rot = integ.node_rotation(nodes)[0]
    assert rot > 6.0
    smooth = np.array([[[0.0], [0.1], [0.2], [0.3]]])
    assert np.isclose(integ.node_rotation(smooth)[0], 0.1)
    # every root rejected: 2 levels of halving -> 4 sub-steps, reported as not converged
    integ = make("pbad3", model, max_rotation=1e-6, substep=2)
    s, d = integ.step(State.make(model, np.array([0.0]), np.array([1.0])), None, 0.01)
    assert d.extra["rejected"][0] and d.extra["substeps"][0] == 4 and not d.converged[0]
    assert np.isfinite(s.q).all()
    # a mild step passes unchanged
    integ = make("pbad3", model)
    s, d = integ.step(State.make(model, np.array([0.0]), np.array([1.0])), None, 0.01)
    assert not d.extra["rejected"][0] and d.extra["substeps"][0] == 1 and d.converged[0]
    assert 0.004 < d.extra["rotation"][0] < 0.02  # ~ (v + a dt) dt / 2 with a ~ 147 rad/s^2
    with pytest.raises(pbsim.InputError):
        make("pbad3", model, max_rotation=0.0)


def test_substep_carries_mid_state_as_previous_node():
    """A step redone as two half steps returns (q, v) of the second half step and, as the next
    step's previous node (pbad3: t - dt/2), the mid-step state itself (not a Taylor guess)."""
    model = pbsim_models.chain(3, joint="ball2")
    s0 = State.make(model, pbsim.integrate(model, model.neutral(), 0.2 * np.arange(model.nv)))
    dt = 0.01
    forced = make("pbad3", model, max_rotation=1e-9, substep=1)
    s, d = forced.step(s0, None, dt)
    assert d.extra["substeps"][0] == 2 and d.extra["rejected"][0]
    plain = make("pbad3", model)
    s1, _ = plain.step(s0, None, dt / 2)
    s2, _ = plain.step(s1, None, dt / 2)
    assert np.allclose(s.q, s2.q, atol=1e-12) and np.allclose(s.v, s2.v, atol=1e-9)
    assert np.allclose(s.carry["pbad3"][1], s1.q, atol=1e-12)
    assert forced._prev_node(s, dt) is s.carry["pbad3"][1]


@pytest.mark.parametrize("name", ["pbad3", "pbad4"])
def test_fallback_takes_the_pbad2_step_and_rebuilds_the_node(name):
    """fallback="pbad2": a step with no acceptable root of Eq. 6 is the order-2 step of Eq. 5
    (same q, v as ``pbad``), reported as ``fallback``, never split; the next step's previous node
    is rebuilt from it (finite, between q_k and q_{k+1} in time)."""
    model = pbsim_models.chain(3, joint="ball2")
    s0 = State.make(model, pbsim.integrate(model, model.neutral(), 0.2 * np.arange(model.nv)))
    dt = 0.05
    forced = make(name, model, max_rotation=1e-9, fallback="pbad2")
    s, d = forced.step(s0, None, dt)
    s2, d2 = make("pbad", model).step(s0, None, dt)
    assert d.extra["fallback"][0] and d.extra["rejected"][0] and d.extra["substeps"][0] == 1
    assert d.converged[0]
    assert np.allclose(s.q, s2.q, atol=1e-10) and np.allclose(s.v, s2.v, atol=1e-8)
    assert np.isclose(d.energy[0], d2.energy[0])
    node = s.carry[name][1]
    assert forced._prev_node(s, dt) is node and np.isfinite(node).all()
    back = pbsim.difference(model, s.q[0], node[0])  # node at tau_0 dt < 0 behind q_{k+1}
    full = pbsim.difference(model, s.q[0], s0.q[0])
    assert 0.0 < np.linalg.norm(back) < np.linalg.norm(full)
    # an ordinary step is not a fallback
    s, d = make(name, model, fallback="pbad2").step(s0, None, 0.002)
    assert not d.extra["fallback"][0] and d.converged[0]
    with pytest.raises(pbsim.InputError, match="fallback"):
        make(name, model, fallback="rk4")
    # the defaults; sub-stepping when asked for by fallback or by a number of levels
    assert make(name, model).fallback == "pbad2"
    assert make(name, model).energy_guard is None
    assert make(name, model, substep=2).fallback == "substep" == make(name, model, fallback="substep").fallback


def test_large_dt_fallback_never_gains_energy():
    """The order-2 fallback keeps pbad3 on the 10-link chain released horizontally at dt = 0.1
    below E0 (+ 1e-3 of the scale) for 3 s, every step converged, few steps fallen back."""
    model = pbsim_models.chain(10, joint="ball2")
    integ = make("pbad3", model, fallback="pbad2")
    s = State.make(model, model.neutral())
    e0 = pbsim.energy(model, s.q[0], s.v[0]).sum()
    scale = pbsim_models.chain_energy_scale(10)
    E, fb = [], 0
    for _ in range(30):
        s, d = integ.step(s, None, 0.1)
        assert d.converged[0] and d.extra["substeps"][0] == 1
        E.append(d.energy[0])
        fb += int(d.extra["fallback"][0])
    assert np.isfinite(E).all() and max(E) - e0 < 1e-3 * scale
    assert fb < 15


@pytest.mark.parametrize("name,K", [("pbad", 2), ("pbad3", 3), ("pbad4", 4)])
def test_small_swing_decays_as_the_linear_spectral_radius(name, K):
    """A pendulum swinging by 1e-3 rad at w dt = 1 is x'' = -w^2 x: the integrator's solution decays
    or grows per step by rho from ``linear_spectral_radius`` (Eq. 4 / Eq. 6 with the weights the
    integrator uses): PBAD2 0.707, pbad3 0.970 (damps), pbad4 1.0019 (grows)."""
    from pbsim.integrators.pbad import linear_spectral_radius

    model = pbsim_models.chain(1, joint="revolute")
    qh = np.array([np.pi / 2])  # hanging
    I = pbsim.crba(model, qh)[0, 0]
    z = np.zeros(1)
    k = (pbsim.rnea(model, qh + 1e-6, z, z) - pbsim.rnea(model, qh - 1e-6, z, z))[0] / 2e-6
    w = np.sqrt(k / I)
    dt = 1.0 / w
    integ = make(name, model)
    s = State.make(model, qh + 1e-3)
    x = []
    for _ in range(90):
        s, d = integ.step(s, None, dt)
        assert d.converged[0]
        x.append(s.q[0, 0] - qh[0])
    # the step is a linear map of a 2-vector (previous node, x_k), so by Cayley-Hamilton the x_k obey
    # x_{k+1} = a x_k + b x_{k-1}; fit (a, b) and compare the roots' modulus with rho
    x = np.array(x[:16] if K == 2 else x)  # PBAD2 reaches the solver tolerance after ~20 steps
    (a, b), *_ = np.linalg.lstsq(np.stack([x[1:-1], x[:-2]], axis=1), x[2:], rcond=None)
    rho_fit = max(abs(np.roots([1.0, -a, -b])))
    assert np.isclose(rho_fit, linear_spectral_radius(K, 1.0), rtol=1e-4, atol=0), rho_fit


def test_extrapolated_guess_finds_the_same_root_in_fewer_iterations():
    """init="extrapolate" (quadratic through the previous node with slope v_k) converges to the same
    root of Eq. 6 as the velocity guess at small dt, in fewer LM iterations."""
    model = pbsim_models.chain(10, joint="ball2")
    runs = {}
    for init in ("velocity", "extrapolate"):
        integ = make("pbad3", model, init=init)
        s = State.make(model, model.neutral())
        its = 0
        for _ in range(100):
            s, d = integ.step(s, None, 0.0025)
            assert d.converged[0] and d.extra["substeps"][0] == 1
            its += d.iterations[0]
        runs[init] = (s.q[0], its)
    assert np.abs(pbsim.difference(model, runs["velocity"][0], runs["extrapolate"][0])).max() < 1e-7
    assert runs["extrapolate"][1] < 0.9 * runs["velocity"][1], runs
    with pytest.raises(pbsim.InputError, match="extrapolate"):
        make("pbad3", model, init="taylor")


def test_small_dt_fallback_keeps_energy_through_the_whips():
    """Fig. 2a setting (10-link chain released horizontally, dt = 0.0025): the whips at t ~ 1.4 and
    2.2 s leave Eq. 6 without a root; with fallback="pbad2" those steps are order-2 steps, so pbad3
    rises at most 3 % of m g L n^2/2 above E0 (2.3 %, just before the first whip), where the default
    sub-stepping's rebuilt nodes gain 8.4 %."""
    model = pbsim_models.chain(10, joint="ball2")
    scale = pbsim_models.chain_energy_scale(10)
    out = {}
    for fb in ("pbad2", "substep"):
        integ = make("pbad3", model, fallback=fb)
        s = State.make(model, model.neutral())
        e0 = pbsim.energy(model, s.q[0], s.v[0]).sum()
        emax, n_fb = -np.inf, 0
        for _ in range(1000):
            s, d = integ.step(s, None, 0.0025)
            assert d.converged[0]
            emax = max(emax, d.energy[0] - e0)
            n_fb += int(d.extra["fallback"][0])
        out[fb] = (emax / scale, n_fb)
    assert 1 <= out["pbad2"][1] <= 20 and out["pbad2"][0] < 0.03, out
    assert out["substep"][1] == 0 and out["substep"][0] > 2 * out["pbad2"][0], out


def test_energy_guard_makes_a_passive_run_one_sided():
    """energy_guard=g rejects a root of Eq. 6 that raises the energy of a passive system by more than
    g (KE_k + KE_k+1) (it then takes the fallback): pbad4 (not A-stable) on the 10-link chain at
    dt = 0.05 gains 0.3 % of m g L n^2/2 without it and nothing with g = 0; with actuation the
    guard is off (the torques do work)."""
    model = pbsim_models.chain(10, joint="ball2")
    scale = pbsim_models.chain_energy_scale(10)
    rise = {}
    for g in (None, 0.0):
        integ = make("pbad4", model, energy_guard=g)
        s = State.make(model, model.neutral())
        E = [pbsim.energy(model, s.q[0], s.v[0]).sum()]
        fb = 0
        for _ in range(200):
            s, d = integ.step(s, None, 0.05)
            assert d.converged[0]
            E.append(d.energy[0])
            fb += int(d.extra["fallback"][0])
        rise[g] = (max(E) - E[0]) / scale
        if g == 0.0:
            assert np.diff(E).max() < 1e-9 * scale and fb > 20
    assert rise[None] > 1e-3 and rise[0.0] <= 0.0, rise
    from pbsim.control import Control
    from pbsim.integrators.pbad import _passive

    assert _passive(Control()) and _passive(Control(tau=np.zeros(model.nv)))
    assert not _passive(Control(tau=np.ones(model.nv))) and not _passive(Control(mode="pd", kp=1.0))
    with pytest.raises(pbsim.InputError, match="energy_guard"):
        make("pbad3", model, energy_guard=-1)
