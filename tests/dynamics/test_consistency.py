"""Internal consistency: ABA vs CRBA/RNEA, Jacobians vs finite differences, group operations."""

import numpy as np
import pytest

import pbsim
import pbsim_models
from conftest import gymnasium_xml, pybullet_file, robosimian_urdf

MODELS = {
    "kuka": lambda: pbsim.load(pybullet_file("kuka_iiwa/model.urdf"), floating_base=False),
    "minitaur": lambda: pbsim.load(pybullet_file("quadruped/minitaur.urdf")),
    "pendulum5": lambda: pbsim.load(pybullet_file("pendulum5.urdf")),
    "laikago": lambda: pbsim.load(pybullet_file("laikago/laikago_toes_zup.urdf")),
    "a1": lambda: pbsim.load(pybullet_file("a1/a1.urdf")),
    "r2d2": lambda: pbsim.load(pybullet_file("r2d2.urdf")),
    "deepmimic": lambda: pbsim.load(pybullet_file("humanoid/humanoid.urdf"), floating_base=True),
    "robosimian": lambda: pbsim.load(robosimian_urdf(), floating_base=True),
    "mj_humanoid": lambda: pbsim.load(gymnasium_xml("humanoid.xml")),
    "mj_ant": lambda: pbsim.load(gymnasium_xml("ant.xml")),
    "chain10": lambda: pbsim_models.chain(10),
    "spherical_chain5": lambda: pbsim_models.chain(5, joint="spherical"),
    "snake36": lambda: pbsim_models.snake(36),
    "spider": lambda: pbsim_models.spider(),
}


@pytest.mark.parametrize("name", list(MODELS))
def test_aba_equals_crba_solve(name):
    model = MODELS[name]()
    rng = np.random.default_rng(3)
    B = 8
    Q = np.array([model.random_configuration(rng) for _ in range(B)])
    V = rng.normal(size=(B, model.nv))
    TAU = rng.normal(size=(B, model.nv)) * 5
    M = pbsim.crba(model, Q)
    h = pbsim.rnea(model, Q, V, np.zeros((B, model.nv)))
    qdd = pbsim.aba(model, Q, V, TAU)
    for k in range(B):
        ref = np.linalg.solve(M[k], TAU[k] - h[k])
        assert np.abs(qdd[k] - ref).max() <= 1e-10 * max(1.0, np.abs(ref).max())
        # and RNEA inverts ABA
        assert np.allclose(pbsim.rnea(model, Q[k], V[k], qdd[k]), TAU[k], rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("name", ["deepmimic", "chain10", "spider"])
def test_jacobian_matches_finite_differences(name):
    model = MODELS[name]()
    rng = np.random.default_rng(4)
    q = model.random_configuration(rng)
    body = model.nb - 1
    point = np.array([0.05, -0.02, 0.1])
    J = pbsim.point_jacobian(model, q, body, point)
    eps = 1e-6
    for j in range(model.nv):
        dv = np.zeros(model.nv)
        dv[j] = eps
        Tp = pbsim.forward_kinematics(model, pbsim.integrate(model, q, dv))[body]
        Tm = pbsim.forward_kinematics(model, pbsim.integrate(model, q, -dv))[body]
        dp = (Tp[:3, :3] @ point + Tp[:3, 3] - Tm[:3, :3] @ point - Tm[:3, 3]) / (2 * eps)
        dR = (Tp[:3, :3] - Tm[:3, :3]) / (2 * eps)
        W = dR @ pbsim.forward_kinematics(model, q)[body][:3, :3].T
        w = np.array([W[2, 1], W[0, 2], W[1, 0]])
        assert np.allclose(J[3:, j], dp, atol=1e-7)
        assert np.allclose(J[:3, j], w, atol=1e-7)


@pytest.mark.parametrize("name", ["deepmimic", "spherical_chain5", "mj_humanoid"])
def test_integrate_difference_inverse(name):
    model = MODELS[name]()
    rng = np.random.default_rng(5)
    q0 = model.random_configuration(rng)
    dv = rng.normal(size=model.nv) * 0.7
    q1 = pbsim.integrate(model, q0, dv)
    assert np.allclose(pbsim.difference(model, q0, q1), dv, atol=1e-10)
    assert np.allclose(pbsim.integrate(model, q0, pbsim.difference(model, q0, q1)), q1, atol=1e-12)


def test_kinetic_energy_is_half_vMv():
    model = MODELS["deepmimic"]()
    rng = np.random.default_rng(6)
    q = model.random_configuration(rng)
    v = rng.normal(size=model.nv)
    ke, _ = pbsim.energy(model, q, v)
    assert ke == pytest.approx(0.5 * v @ pbsim.crba(model, q) @ v, rel=1e-12)


def test_potential_energy_gradient_is_gravity_torque():
    model = MODELS["kuka"]()
    rng = np.random.default_rng(7)
    q = model.random_configuration(rng)
    g = pbsim.rnea(model, q, np.zeros(model.nv), np.zeros(model.nv))
    eps = 1e-6
    for j in range(model.nv):
        dv = np.zeros(model.nv)
        dv[j] = eps
        dV = (
            pbsim.energy(model, pbsim.integrate(model, q, dv), np.zeros(model.nv))[1]
            - pbsim.energy(model, pbsim.integrate(model, q, -dv), np.zeros(model.nv))[1]
        ) / (2 * eps)
        assert dV == pytest.approx(g[j], abs=1e-6)
