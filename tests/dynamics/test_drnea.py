"""DRNEA (paper 004 Alg. 2) and the SE(3) closed forms against independent oracles:
scipy's matrix exp/log and a dense generalized-coordinate DEL (central differences of Ld)."""

import numpy as np
import pytest
import scipy.linalg as sl

import pbsim_models
from pbsim.dynamics import api
from pbsim.dynamics.drnea import drnea, drnea_eval, drnea_jacobian, drnea_setup, make_drnea_work
from pbsim.dynamics.se3 import dexpinv_apply, dexpinv_T_apply, dexpinv_T_pair, se3_exp, se3_log


def hat(xi):
    w, v = xi[:3], xi[3:]
    X = np.zeros((4, 4))
    X[:3, :3] = [[0, -w[2], w[1]], [w[2], 0, -w[0]], [-w[1], w[0], 0]]
    X[:3, 3] = v
    return X


def vee(X):
    return np.r_[X[2, 1], X[0, 2], X[1, 0], X[:3, 3]]


@pytest.mark.parametrize("scale", [1e-7, 0.09, 0.15, 0.5, 3.0])  # series / closed-form sides of log
def test_se3_exp_log_dexpinv_closed_forms(scale):
    rng = np.random.default_rng(int(scale * 1000))
    xi = rng.normal(size=6)
    xi[:3] *= scale / np.linalg.norm(xi[:3])  # rotation angle = scale (< pi: principal log)
    R, p = np.zeros((3, 3)), np.zeros(3)
    se3_exp(xi, R, p)
    T = sl.expm(hat(xi))
    assert np.allclose(R, T[:3, :3], atol=1e-13) and np.allclose(p, T[:3, 3], atol=1e-13)
    out = np.zeros(6)
    se3_log(T[:3, :3].copy(), T[:3, 3].copy(), out)
    assert np.allclose(out, xi, atol=1e-12)
    assert np.abs(out - xi).max() < 1e-14 * max(1.0, np.abs(xi).max())  # series branches as exact as closed forms
    # Jr: exp(xi + h d) = exp(xi) exp(h Jr d); check Jr^-1 and Jl^-1 = Jr^-1(-xi) by differences
    h = 1e-6
    Jr = np.zeros((6, 6))
    for c in range(6):
        d = np.zeros(6)
        d[c] = h
        Jr[:, c] = (
            vee(sl.logm(np.linalg.solve(T, sl.expm(hat(xi + d)))).real)
            - vee(sl.logm(np.linalg.solve(T, sl.expm(hat(xi - d)))).real)
        ) / (2 * h)
    Jri = np.zeros((6, 6))
    JliT = np.zeros((6, 6))
    tmp = np.zeros(6)
    for c in range(6):
        e = np.eye(6)[c]
        dexpinv_apply(xi, e, 1.0, tmp, Jri[:, c])
        dexpinv_T_apply(-xi, e, 1.0, tmp, JliT[:, c])  # Jr^-T(-xi) = Jl^-T(xi)
    assert np.allclose(Jri @ Jr, np.eye(6), atol=1e-7)
    Jli = np.zeros((6, 6))
    for c in range(6):
        dexpinv_apply(xi, np.eye(6)[c], -1.0, tmp, Jli[:, c])
    assert np.allclose(Jli.T, JliT, atol=1e-13)
    # Jl = Ad_exp(xi) Jr
    Ad = np.zeros((6, 6))
    Ad[:3, :3] = T[:3, :3]
    Ad[3:, 3:] = T[:3, :3]
    P = T[:3, 3]
    Ad[3:, :3] = np.array([[0, -P[2], P[1]], [P[2], 0, -P[0]], [-P[1], P[0], 0]]) @ T[:3, :3]
    assert np.allclose(Jli @ Ad @ Jr, np.eye(6), atol=1e-7)
    # the scalar pair used by DRNEA: (Jl^-T f, Jr^-T f)
    f = rng.normal(size=6)
    outl, outr = np.zeros(6), np.zeros(6)
    dexpinv_T_pair(xi, f, outl, outr)
    assert np.allclose(outl, Jli.T @ f, rtol=1e-14, atol=1e-14) and np.allclose(outr, Jri.T @ f, rtol=1e-14, atol=1e-14)


def discrete_lagrangian(model, qa, qb, dt):
    """Ld of Eq. 9 from forward kinematics, scipy's logm and our potential energy."""
    Ta = api.forward_kinematics(model, qa)
    Tb = api.forward_kinematics(model, qb)
    K = 0.0
    for i in range(model.nb):
        V = vee(sl.logm(np.linalg.solve(Ta[i], Tb[i])).real) / dt
        K += 0.5 * V @ model.inertia[i] @ V
    z = np.zeros(model.nv)
    return dt * K - 0.5 * dt * (api.energy(model, qa, z)[1] + api.energy(model, qb, z)[1])


def dense_del(model, q0, q1, q2, dt, eps=1e-6):
    f = np.zeros(model.nv)
    for j in range(model.nv):
        e = np.zeros(model.nv)
        e[j] = eps
        qp, qm = api.integrate(model, q1, e), api.integrate(model, q1, -e)
        f[j] = (
            discrete_lagrangian(model, q0, qp, dt)
            + discrete_lagrangian(model, qp, q2, dt)
            - discrete_lagrangian(model, q0, qm, dt)
            - discrete_lagrangian(model, qm, q2, dt)
        ) / (2 * eps)
    return -f


@pytest.mark.parametrize("joint,n", [("revolute", 4), ("spherical", 3), ("free", 2)])
def test_drnea_matches_dense_generalized_del(joint, n):
    if joint == "free":
        model = pbsim_models.snake(8)
    else:
        model = pbsim_models.chain(n, joint)
    rng = np.random.default_rng(1)
    dt = 0.01
    q1 = model.random_configuration(rng)
    q0 = api.integrate(model, q1, -dt * rng.normal(size=model.nv))
    q2 = api.integrate(model, q1, dt * rng.normal(size=model.nv))
    f = drnea(model, q0, q1, q2, dt)
    fd = dense_del(model, q0, q1, q2, dt)
    assert np.abs(f).max() > 1e-4  # a non-trivial residual
    assert np.abs(f - fd).max() < 1e-8


def test_drnea_torque_impulse_and_armature():
    model = pbsim_models.chain(2)
    q0, q1, q2 = np.array([0.1, 0.2]), np.array([0.11, 0.19]), np.array([0.12, 0.185])
    tau = np.array([0.3, -0.2])
    assert np.allclose(drnea(model, q0, q1, q2, 0.01, tau), drnea(model, q0, q1, q2, 0.01) - 0.01 * tau)
    # armature: the rotor term dt/2 arm ((q_b - q_a)/dt)^2 of Ld adds arm (q2 - 2 q1 + q0) / dt to f
    dt, arm = 0.01, np.array([0.05, 0.07])
    marm = pbsim_models.chain(2)
    marm.armature = arm.copy()  # before its first use (Model.k caches the arrays)
    q2b = np.array([0.125, 0.185])  # second difference (0.005, 0.005): both joints see their armature

    def ld_rotor(qa, qb):
        return 0.5 * dt * np.sum(arm * ((qb - qa) / dt) ** 2)

    eps = 1e-6
    rotor = np.array(
        [
            -(ld_rotor(q0, q1 + e) + ld_rotor(q1 + e, q2b) - ld_rotor(q0, q1 - e) - ld_rotor(q1 - e, q2b)) / (2 * eps)
            for e in eps * np.eye(2)
        ]
    )  # DEL of the rotor Lagrangian, central differences
    f = drnea(marm, q0, q1, q2b, dt, tau)
    plain = drnea(model, q0, q1, q2b, dt, tau)
    assert np.abs(f - plain).min() > 0.02  # the armature changes every component: (0.025, 0.035)
    assert np.allclose(f - plain, arm * (q2b - 2 * q1 + q0) / dt, rtol=0, atol=1e-12)
    assert np.abs(f - (dense_del(marm, q0, q1, q2b, dt) + rotor - dt * tau)).max() < 1e-8  # the dense oracle
    # on the original triple only the second joint accelerates: its armature alone shows
    d = drnea(marm, q0, q1, q2, dt, tau) - drnea(model, q0, q1, q2, dt, tau)
    assert np.allclose(d, [0.0, arm[1] * 0.005 / dt], rtol=0, atol=1e-12)


def test_drnea_exact_jacobian_matches_differences():
    model = pbsim_models.snake(9)
    rng = np.random.default_rng(2)
    dt = 0.01
    q1 = model.random_configuration(rng)
    q0 = api.integrate(model, q1, -dt * rng.normal(size=model.nv))
    q2 = api.integrate(model, q1, dt * rng.normal(size=model.nv))
    dw = make_drnea_work(model, 1)
    m = model.k
    f = np.zeros(model.nv)
    drnea_setup(m, dw, 0, q0, q1, dt, True, 1.0)
    drnea_eval(m, dw, 0, q2, dt, f)
    J = np.zeros((model.nv, model.nv))
    drnea_jacobian(m, dw, 0, dt, J)
    Jn = np.zeros_like(J)
    h = 1e-7
    for j in range(model.nv):
        e = np.zeros(model.nv)
        e[j] = h
        fp, fm = np.zeros(model.nv), np.zeros(model.nv)
        drnea_eval(m, dw, 0, api.integrate(model, q2, e), dt, fp)
        drnea_eval(m, dw, 0, api.integrate(model, q2, -e), dt, fm)
        Jn[:, j] = (fp - fm) / (2 * h)
    assert np.abs(J - Jn).max() < 1e-6 * np.abs(J).max()


def test_drnea_rejects_bad_input():
    from pbsim.errors import InputError

    model = pbsim_models.chain(2)
    with pytest.raises(InputError, match="dt"):
        drnea(model, np.zeros(2), np.zeros(2), np.zeros(2), 0.0)
    with pytest.raises(InputError, match="q_next"):
        drnea(model, np.zeros(2), np.zeros(2), np.zeros(3), 0.01)
