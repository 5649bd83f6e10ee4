"""Stable PD (paper 001): DF, SF and MABA agree; Eq. 6 holds; SPD is stable where PD diverges."""

import dataclasses

import numpy as np
import pytest

import pbsim
from pbsim.control import Reference, control_from_args, gains, motions, per_dof, spd_forward
from pbsim.control.control import dof_parents
from pbsim.errors import InputError
from tests.conftest import pybullet_file, robosimian_urdf

import pbsim_models


def _dog():
    from pbsim_models.dog import dog

    return dog()


def _models():
    out = [
        ("humanoid", lambda: pbsim.load(pybullet_file("humanoid/humanoid.urdf"), floating_base=True)),
        ("robosimian", lambda: pbsim.load(robosimian_urdf(), floating_base=True)),
        ("snake36", lambda: pbsim_models.snake(36)),
        ("snake72", lambda: pbsim_models.snake(72)),
        ("dog72", _dog),
        ("chain12", lambda: pbsim_models.chain(12)),
        ("ballchain6", lambda: pbsim_models.chain(6, joint="ball")),
    ]
    return out


@pytest.mark.parametrize("name,make", _models(), ids=[n for n, _ in _models()])
def test_df_sf_maba_same_acceleration_and_eq6(name, make):
    # the passive joint torques (limits, springs, dry friction: tests/integrators/test_limits.py,
    # test_passive.py) are off: random states sit past Robosimian's limits and its URDF has joint
    # friction, and this test checks SPD's own equations (Eq. 5-6)
    m0 = make()
    m = dataclasses.replace(
        m0, limit_stiffness=0.0, limit_damping=0.0, frictionloss=np.zeros(m0.nv), stiffness=np.zeros(m0.nv)
    )
    rng = np.random.default_rng(7)
    B = 3
    q = np.stack([m.random_configuration(rng) for _ in range(B)])
    v = rng.normal(size=(B, m.nv))
    c = pbsim.Control(
        mode="spd",
        kp=rng.uniform(0, 8e4, (B, m.nv)),
        kd=rng.uniform(0, 5e3, (B, m.nv)),
        q_ref=np.stack([m.random_configuration(rng) for _ in range(B)]),
        v_ref=rng.normal(size=(B, m.nv)),
        tau=rng.normal(size=m.nv),
    )
    dt = 1.0 / 30.0
    for predict in ("linear", "exact"):
        c = dataclasses.replace(c, spd_predict=predict)
        res = {s: spd_forward(m, q, v, c, dt, solver=s) for s in ("maba", "sf", "df")}
        a = res["maba"][0]
        for s in ("sf", "df"):
            rel = np.abs(res[s][0] - a).max() / np.abs(a).max()
            assert rel < 1e-9, (name, predict, s, rel)
        # Eq. 6 with the new acceleration: tau = tau_ff - kp e - kd (v + dt qdd - v_ref), with the position
        # error e = (q + dt v) - q_ref taken in the tangent space at q (first order, Eq. 4) or exactly
        qdd, tau = res["maba"]
        if predict == "linear":
            e = -pbsim.difference(m, q, c.q_ref) + dt * v
        else:
            e = -pbsim.difference(m, pbsim.integrate(m, q, dt * v), c.q_ref)
        tau6 = c.tau - c.kp * e - c.kd * (v + dt * qdd - c.v_ref)
        assert np.abs(tau - tau6).max() <= 1e-9 * np.abs(tau6).max(), predict
        # ... and the equation of motion (Eq. 5) with that torque (implicit joint damping as in euler)
        lhs = pbsim.rnea(m, q, v, qdd)
        assert np.abs(lhs - (tau - m.damping * (v + dt * qdd))).max() <= 1e-9 * np.abs(lhs).max()
        # standalone MABA (Sec. 5): its torque through plain forward dynamics gives the same qdd
        if not np.any(m.damping):
            assert np.abs(pbsim.aba(m, q, v, tau) - qdd).max() <= 1e-7 * np.abs(qdd).max()
    if m.nq == m.nv:  # 1-DOF joints only: the two predictions are the same formula
        r_lin = spd_forward(m, q, v, dataclasses.replace(c, spd_predict="linear"), dt)[0]
        assert np.abs(r_lin - a).max() <= 1e-12 * np.abs(a).max()


def test_spd_predictions_agree_to_first_order_on_ball_joints():
    """linear and exact q + dt v differ by O(dt |v| |q (-) q_ref|) on ball joints: halving dt halves
    the gap in the torque (kd = 0, so the torque is kp times the position error), and a bad name is
    refused."""
    m = pbsim_models.chain(4, joint="spherical")
    rng = np.random.default_rng(3)
    q = m.random_configuration(rng)[None]
    q_ref = pbsim.integrate(m, q, 0.3 * rng.normal(size=(1, m.nv)))
    v = rng.normal(size=(1, m.nv))
    gaps = []
    for dt in (0.02, 0.01, 0.005):
        out = [
            spd_forward(m, q, v, pbsim.Control(mode="spd", kp=1e3, kd=0.0, q_ref=q_ref, spd_predict=p), dt)[1]
            for p in ("linear", "exact")
        ]
        gaps.append(np.abs(out[0] - out[1]).max())
    assert gaps[0] > 0
    assert gaps[1] < 0.6 * gaps[0] and gaps[2] < 0.6 * gaps[1], gaps
    with pytest.raises(InputError, match="spd_predict"):
        spd_forward(m, q, v, pbsim.Control(mode="spd", kp=1.0, spd_predict="second"), 0.01)


def test_sparse_factor_is_exact_for_branchy_tree():
    """SF touches only ancestor entries: with the humanoid's lambda the LTL factor reproduces M."""
    from pbsim.control.sparse import ltl_factor

    m = pbsim.load(pybullet_file("humanoid/humanoid.urdf"), floating_base=True)
    q = m.random_configuration(np.random.default_rng(1))
    M = pbsim.crba(m, q)
    H = M.copy()
    lam = dof_parents(m)
    ltl_factor(m.nv, lam, H)
    L = np.tril(H)
    assert np.allclose(L.T @ L, M, rtol=0, atol=1e-10 * np.abs(M).max())
    assert dof_parents(m)[6] == 5 and dof_parents(m)[0] == -1


def test_pd_diverges_spd_stable_at_dt_1_30():
    """Sec. 4.1 gains (kp 75000 / kd 4000 internal, 20000 / 2000 hand-of-God root), dt = 1/30."""
    m = pbsim.load(pybullet_file("humanoid/humanoid.urdf"), floating_base=True)
    dt = 1.0 / 30.0
    out = {}
    for mode in ("pd", "spd"):
        ref = motions.humanoid_gait(m, kp=75000, kd=4000, root="hog", mode=mode, dt=dt)
        tr = pbsim.rollout(m, "euler", dt=dt, steps=45, q0=ref.q_at(0), v0=ref.v_at(0), control=ref, on_nan="stop")
        err = max(np.abs(pbsim.difference(m, ref.q_at(t), q)).max() for t, q in zip(tr.t, tr.q))
        out[mode] = (bool(tr.diverged[0]), err)
    assert out["pd"][0] or out["pd"][1] > 10.0, out
    assert not out["spd"][0] and out["spd"][1] < 0.3, out


def test_dog_is_branchy_72_dof_and_spd_tracks_it_at_dt_1_30():
    """The paper's Table 1 dog: n = 72, deep (25 DOF root-to-toe) and branchy; SPD (hand-of-God root,
    Sec. 4.1 gains) tracks our trot at dt = 1/30 where plain PD with the same gains diverges."""
    from pbsim.control.control import dof_parents

    m = _dog()
    lam = dof_parents(m)
    depth = np.zeros(m.nv, dtype=int)
    for j in range(m.nv):
        depth[j] = 1 + (depth[lam[j]] if lam[j] >= 0 else 0)
    assert m.nv == 72 and depth.max() == 25 and np.bincount(lam[lam >= 0]).max() >= 4
    dt = 1.0 / 30.0
    out = {}
    for mode in ("pd", "spd"):
        ref = motions.dog_trot(m, kp=75000, kd=4000, root="hog", mode=mode, dt=dt)
        tr = pbsim.rollout(m, "euler", dt=dt, steps=30, q0=ref.q_at(0), v0=ref.v_at(0), control=ref, on_nan="stop")
        err = max(np.abs(pbsim.difference(m, ref.q_at(t), q)).max() for t, q in zip(tr.t, tr.q))
        out[mode] = (bool(tr.diverged[0]), err)
    assert out["pd"][0] or out["pd"][1] > 10.0, out
    assert not out["spd"][0] and out["spd"][1] < 0.3, out


def test_euler_solvers_agree_and_clamp():
    m = pbsim_models.snake(36)
    dt = 1.0 / 60.0
    ref = motions.snake_slither(m, kp=2000, kd=100, root="hog", dt=dt)
    runs = {
        s: pbsim.rollout(m, "euler", dt=dt, steps=20, control=lambda t, st, s=s: _with(ref(t), spd_solver=s))
        for s in ("maba", "sf", "df")
    }
    for s in ("sf", "df"):
        assert np.abs(runs[s].q - runs["maba"].q).max() < 1e-9
    # clamping: every hinge torque within the model's 50 Nm effort
    c = _with(ref(0.0), clamp=True, kp=per_dof(m, {"joint*": 5e4, "*root": 2e4}))
    q0 = m.default_configuration()
    qdd, tau = spd_forward(m, q0, np.zeros(m.nv), c, dt)
    _, tau_free = spd_forward(m, q0, np.zeros(m.nv), _with(c, clamp=False), dt)
    assert np.abs(tau_free[6:]).max() > 50.0  # the test needs saturation
    assert np.abs(tau[6:]).max() <= 50.0 + 1e-9
    assert np.abs(pbsim.rnea(m, q0, np.zeros(m.nv), qdd) - tau).max() < 1e-8 * np.abs(tau).max()


def _with(c, **kw):
    from dataclasses import replace

    return replace(c, **kw)


def test_targets_gains_and_files(tmp_path):
    m = pbsim.load(pybullet_file("humanoid/humanoid.urdf"), floating_base=True)
    kp, kd = gains(m, {"*": 75000.0, "right_knee": 1.0}, 4000.0, root="hog")
    assert kp[:6].tolist() == [20000.0] * 6 and kd[:6].tolist() == [2000.0] * 6
    assert kp[m.idx_v("right_knee")][0] == 1.0 and kp[m.idx_v("chest")].tolist() == [75000.0] * 3
    with pytest.raises(InputError, match="no joint matches 'elbo'"):
        per_dof(m, {"elbo": 1.0})
    ref = motions.humanoid_gait(m)
    ts = np.linspace(0.0, 1.0, 11)
    for ext in ("npz", "csv"):
        p = tmp_path / f"gait.{ext}"
        ref.save(p, ts)
        r2 = control_from_args(m, control="spd", solver="sf", kp="75000", kd="*=4000", target=str(p))
        assert isinstance(r2, Reference)
        assert np.allclose(r2.q_at(0.3), ref.q_at(0.3), atol=1e-12)  # a sample
        mid = r2.q_at(0.35)  # geodesic midpoint between samples
        d0 = pbsim.difference(m, ref.q_at(0.3), mid)
        d1 = pbsim.difference(m, mid, ref.q_at(0.4))
        assert np.allclose(d0, d1, atol=1e-9)
        c = r2(0.35, None)
        assert c.spd_solver == "sf" and c.kp[0] == 0.0 and c.kd[10] == 4000.0  # passive root by default
    (tmp_path / "bad.csv").write_text("t,nose\n0,1\n")
    with pytest.raises(InputError, match="nose"):
        control_from_args(m, target=str(tmp_path / "bad.csv"))
    with pytest.raises(InputError, match="spd_solver"):
        pbsim.Control(mode="spd", spd_solver="lu").kernel_arrays(m, 1)
