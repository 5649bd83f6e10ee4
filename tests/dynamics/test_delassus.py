"""The equality constraints' responses and Delassus matrix (pbsim.dynamics.delassus: transform-free
passes in world coordinates with ABA's factor) against dense linear algebra: ``Y = A^-1 J^T`` and
``K = J A^-1 J^T`` with ``A = M + diag(arm)`` from CRBA, to 1e-12 at random states, on a branched
tree (free base, ball, hinge and slide joints) tied by two connects and a weld, and on
test_equality's every-row model; the constrained acceleration of ``equality_accel`` equals the
dense KKT solution."""

import numpy as np

import pbsim
from pbsim.dynamics.aba import aba_backward, aba_forward, aba_init
from pbsim.dynamics.api import crba
from pbsim.dynamics.delassus import delassus, responses, world_force_axes, world_motion_axes
from pbsim.dynamics.equality import eq_bias_pass, equality_accel, equality_rows
from pbsim.dynamics.kinematics import velocity_pass, world_pass
from pbsim.dynamics.workspace import make_work

BRANCHED = """<mujoco><option><flag contact="disable"/></option><worldbody>
<body name="torso" pos="0 0 1"><freejoint/><geom type="box" size="0.2 0.1 0.3"/>
 <body name="ua_l" pos="0 0.2 0.2"><joint type="ball"/><geom type="capsule" fromto="0 0 0 0 0.3 0" size="0.04"/>
  <body name="la_l" pos="0 0.3 0"><joint axis="1 0 0"/><geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03"/></body></body>
 <body name="ua_r" pos="0 -0.2 0.2"><joint type="ball"/><geom type="capsule" fromto="0 0 0 0 -0.3 0" size="0.04"/>
  <body name="la_r" pos="0 -0.3 0"><joint axis="1 0 0"/><geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03"/></body></body>
 <body name="thigh" pos="0 0 -0.3"><joint axis="0 1 0"/><geom type="capsule" fromto="0 0 0 0 0 -0.4" size="0.05"/>
  <body name="shin" pos="0 0 -0.4"><joint type="slide" axis="0 0 1"/><joint axis="1 0 0"/>
   <geom type="capsule" fromto="0 0 0 0 0 -0.3" size="0.04"/></body></body></body>
<body name="c0" pos="1 0 1"><joint axis="0 0 1"/><geom type="capsule" fromto="0 0 0 0 0 -0.3" size="0.03"/>
 <body name="c1" pos="0 0 -0.3"><joint axis="0 1 0"/><geom type="capsule" fromto="0 0 0 0 0 -0.3" size="0.03"/>
  <body name="c2" pos="0 0 -0.3"><joint type="ball"/><geom type="sphere" size="0.05"/></body></body></body>
</worldbody><equality>
 <connect body1="la_l" body2="la_r" anchor="0.3 0 0"/>
 <connect body1="shin" anchor="0 0 -0.3"/>
 <weld body1="c2" body2="torso"/>
</equality></mujoco>"""


def _load(tmp_path, name, xml):
    p = tmp_path / f"{name}.xml"
    p.write_text(xml)
    return pbsim.load(str(p))


def _states(model, n, seed):
    rng = np.random.default_rng(seed)
    q0 = model.default_configuration()
    for _ in range(n):
        q = pbsim.integrate(model, q0, rng.normal(scale=0.7, size=model.nv))
        yield q, rng.normal(size=model.nv), rng.uniform(0.0, 0.5, size=model.nv)


def _factor(model, w, q, v, arm, tau):
    """ABA at (q, v) with ``arm`` on D: the factor in w, returns qdd0."""
    m = model.k
    qdd = np.zeros(model.nv)
    velocity_pass(m, w, 0, q, v)
    aba_init(m, w, 0)
    aba_backward(m, w, 0, tau, arm)
    aba_forward(m, w, 0, qdd)
    return qdd


def _check_delassus(model, seed):
    m = model.k
    K = model.neq_rows
    w = make_work(model, 1)
    for q, v, arm in _states(model, 5, seed):
        _factor(model, w, q, v, arm, np.zeros(model.nv))
        world_pass(m, w, 0)
        equality_rows(m, w, 0, q, v, False, True)
        world_motion_axes(m, w, 0)
        world_force_axes(m, w, 0)
        responses(m, w, 0, w.eJ[0], w.eY[0], K)
        delassus(m, w, 0, w.eJ[0], w.eY[0], w.eK[0], K)
        J = w.eJ[0].copy()
        A = crba(model, q) + np.diag(arm)
        Y = np.linalg.solve(A, J.T)  # A^-1 J^T (nv, K)
        Kd = J @ Y
        assert np.abs(w.eY[0] - Y).max() <= 1e-12 * max(1.0, np.abs(Y).max())
        assert np.abs(w.eK[0] - Kd).max() <= 1e-12 * max(1.0, np.abs(Kd).max())
        assert np.array_equal(w.ez[0], (np.abs(J).max(axis=1) == 0.0).astype(float))


def test_delassus_branched(tmp_path):
    model = _load(tmp_path, "branched", BRANCHED)
    assert model.neq_rows == 12
    _check_delassus(model, 0)


def test_delassus_all_rows(tmp_path):
    from test_equality import ALL_ROWS  # skips without mujoco (its oracle), as test_equality does

    _check_delassus(_load(tmp_path, "all", ALL_ROWS), 1)


def test_equality_accel_is_kkt(tmp_path):
    """``equality_accel``'s qdd solves ``A qdd = f + J^T lambda``, ``J qdd = -J' v`` (dense)."""
    model = _load(tmp_path, "branched", BRANCHED)
    m = model.k
    w = make_work(model, 1)
    rng = np.random.default_rng(2)
    for q, v, arm in _states(model, 5, 3):
        tau = rng.normal(size=model.nv)
        qdd0 = _factor(model, w, q, v, arm, tau)
        qdd = qdd0.copy()
        equality_accel(m, w, 0, q, v, qdd)
        velocity_pass(m, w, 0, q, v)
        world_pass(m, w, 0)
        eq_bias_pass(m, w, 0)
        equality_rows(m, w, 0, q, v, True, True)
        J, bias = w.eJ[0].copy(), w.ea[0].copy()
        A = crba(model, q) + np.diag(arm)
        lam = np.linalg.solve(J @ np.linalg.solve(A, J.T), -bias - J @ qdd0)
        ref = qdd0 + np.linalg.solve(A, J.T @ lam)
        assert np.abs(qdd - ref).max() <= 1e-10 * max(1.0, np.abs(ref).max())
