"""Mimic joints with exact coupling (URDF ``<mimic>``, ``mimic="couple"``, the default).

A mimic joint is slaved to its master (``q = m q_master + o``, no DOF of its own), as Pinocchio's
``buildModelFromUrdf(..., mimic=True)``: the reduced mass matrix ``G^T M G`` and the reduced
forward dynamics equal Pinocchio's on the two pybullet_data grippers; the explicit integrators
keep the coupling (to round-off, then projected) and conserve energy as without it; the other
integrators refuse a coupled model; bad input is a named error."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import pbsim
from conftest import pybullet_file
from pbsim.errors import InputError, ParseError
from pbsim.integrators.base import make

ROOT = Path(__file__).resolve().parents[2]
GRIPPERS = ["xarm/xarm6_with_gripper.urdf", "franka_panda/panda.urdf"]


def quiet_load(path, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pbsim.load(path, **kw)


def coupled_qdd(model, Q, V, T):
    """Our coupled forward dynamics: ABA, then the mimic projection with ABA's factor (the path
    ``accel_solve`` takes in every explicit step)."""
    from pbsim.dynamics.mimic import mimic_accel
    from pbsim.dynamics.workspace import work_for

    qdd = pbsim.aba(model, Q, V, T)
    w = work_for(model, len(Q))  # the workspace pbsim.aba just ran in: its U, D^-1 per state
    for b in range(len(Q)):
        mimic_accel(model.k, w, b, qdd[b])
    return qdd


def states(model, n=3, seed=0):
    rng = np.random.default_rng(seed)
    Q = np.array([model.random_configuration(rng) for _ in range(n)])
    _, V = model.mimic_project(Q, rng.normal(size=(n, model.nv)))
    return Q, V, rng.normal(size=(n, model.nv))


# ---------------------------------------------------------------------- Pinocchio's mimic=True
@pytest.mark.parametrize("rel", GRIPPERS)
def test_reduced_dynamics_match_pinocchio_mimic_model(rel):
    pin = pytest.importorskip("pinocchio")
    path = pybullet_file(rel)
    m = quiet_load(path, floating_base=False)  # Pinocchio's buildModelFromUrdf: fixed base
    pm = pin.buildModelFromUrdf(path, mimic=True)
    pd = pm.createData()
    G, free = m.mimic_coupling()
    assert m.nmimic == {"xarm/xarm6_with_gripper.urdf": 5, "franka_panda/panda.urdf": 1}[rel]
    assert (m.nv, G.shape[1]) == (pm.nv + m.nmimic, pm.nv)
    slaves = {s for s, _, _, _ in m.mimic}
    body_of = {int(m.iv[i]): i for i in range(m.nb)}
    perm = np.array([pm.joints[pm.getJointId(m.joint_names[body_of[int(j)]])].idx_v for j in free])

    def pin_q(q):
        qp = np.zeros(pm.nq)
        for i in range(m.nb):
            if m.joint_names[i] not in slaves:
                qp[pm.joints[pm.getJointId(m.joint_names[i])].idx_q] = q[m.iq[i]]
        return qp

    Q, V, T = states(m)
    M = pbsim.crba(m, Q)
    h = pbsim.rnea(m, Q, V, np.zeros_like(V))
    qdd = coupled_qdd(m, Q, V, T)
    err_m = err_fd = err_dense = 0.0
    for b in range(len(Q)):
        qp, vp = pin_q(Q[b]), np.zeros(pm.nv)
        vp[perm] = V[b, free]
        Mp = pin.crba(pm, pd, qp)
        Mp = np.triu(Mp) + np.triu(Mp, 1).T
        Mr = G.T @ M[b] @ G
        err_m = max(err_m, np.abs(Mr - Mp[np.ix_(perm, perm)]).max() / np.abs(Mp).max())
        # Pinocchio's reduced forward dynamics: M_r a = G^T tau - nle
        tp = np.zeros(pm.nv)
        tp[perm] = G.T @ T[b]
        ap = np.linalg.solve(Mp, tp - pin.nonLinearEffects(pm, pd, qp, vp))
        err_fd = max(err_fd, np.abs(ap[perm] - qdd[b, free]).max() / np.abs(ap).max())
        # the dense formula with our own M, h: qdd = G (G^T M G)^-1 G^T (tau - h)
        dense = G @ np.linalg.solve(Mr, G.T @ (T[b] - h[b]))
        err_dense = max(err_dense, np.abs(dense - qdd[b]).max() / np.abs(dense).max())
        assert np.allclose(qdd[b], G @ qdd[b, free], rtol=0, atol=1e-10 * np.abs(qdd[b]).max())
    print(f"{rel}: G^T M G {err_m:.1e}, forward dynamics {err_fd:.1e}, dense formula {err_dense:.1e}")
    assert err_m < 1e-9
    assert err_fd < 1e-9
    assert err_dense < 1e-10


def test_dense_and_sparse_spd_solvers_are_coupled_too():
    """SPD through DF/SF (no ABA factor of their own) gives the same coupled acceleration as MABA."""
    path = pybullet_file("xarm/xarm6_with_gripper.urdf")
    m = quiet_load(path)
    Q, V, _ = states(m, n=2, seed=3)
    ctrl = pbsim.Control(mode="spd", kp=50.0, kd=2.0, q_ref=m.mimic_project(np.full(m.nq, 0.3)))
    out = {s: pbsim.spd_forward(m, Q, V, ctrl, 1e-3, solver=s)[0] for s in ("maba", "df", "sf")}
    for s in ("df", "sf"):
        assert np.abs(out[s] - out["maba"]).max() < 1e-9 * np.abs(out["maba"]).max()
    c = out["maba"][:, m.mimic_vs] - m.mimic_mult * out["maba"][:, m.mimic_vm]
    assert np.abs(c).max() < 1e-10 * np.abs(out["maba"]).max()


# ---------------------------------------------------------------------- a generated gripper
def gripper_urdf(tmp_path, mimic=True):
    """Static base, a wrist swinging about x under gravity, two fingers sliding along y; finger 2
    mimics finger 1 with multiplier -1 and offset 0.1 (they close and open together)."""

    def link(n, mass, com="0 0 0", i="0.002 0.001 0.0015"):
        ixx, iyy, izz = i.split()
        return (
            f'<link name="{n}"><inertial><origin xyz="{com}"/><mass value="{mass}"/>'
            f'<inertia ixx="{ixx}" iyy="{iyy}" izz="{izz}" ixy="0" ixz="0" iyz="0"/></inertial></link>'
        )

    mim = '<mimic joint="finger1" multiplier="-1" offset="0.1"/>' if mimic else ""
    body = (
        link("base", 0)
        + link("palm", 0.8, "0 0 -0.1", "0.004 0.003 0.002")
        + link("left", 0.1, "0 0 -0.05")
        + link("right", 0.15, "0.01 0 -0.05")
        + '<joint name="wrist" type="revolute"><parent link="base"/><child link="palm"/><axis xyz="1 0 0"/>'
        '<limit lower="-10" upper="10" effort="10" velocity="10"/></joint>'
        '<joint name="finger1" type="prismatic"><parent link="palm"/><child link="left"/><origin xyz="0 0 -0.15"/>'
        '<axis xyz="0 1 0"/></joint>'
        '<joint name="finger2" type="prismatic"><parent link="palm"/><child link="right"/>'
        f'<origin xyz="0 -0.05 -0.15" rpy="0 0.3 0"/><axis xyz="0 1 0"/>{mim}</joint>'
    )
    p = tmp_path / ("gripper.urdf" if mimic else "gripper_free.urdf")
    p.write_text(f'<?xml version="1.0"?>\n<robot name="gripper">{body}</robot>')
    return str(p)


def test_generated_gripper_coupling_and_energy(tmp_path):
    m = pbsim.load(gripper_urdf(tmp_path))
    assert m.mimic == [("finger2", "finger1", -1.0, 0.1)] and m.nv == 3
    free = pbsim.load(gripper_urdf(tmp_path, mimic=False))
    s, j = m.mimic_vs[0], m.mimic_vm[0]
    q0 = np.array([0.9, 0.02, 0.08])  # finger2 = -finger1 + 0.1
    v0 = np.array([-1.0, 0.3, -0.3])
    report = []
    for integ in ("rk4", "euler"):
        tr = pbsim.rollout(m, integ, dt=1e-3, steps=1000, q0=q0, v0=v0)
        drift = max(np.abs(tr.q[:, s] - (-tr.q[:, j] + 0.1)).max(), np.abs(tr.v[:, s] + tr.v[:, j]).max())
        assert drift < 1e-12, (integ, drift)
        assert np.ptp(tr.q[:, j]) > 0.01  # the fingers do move
        de = np.abs(tr.energy - tr.energy[0]).max()
        ref = pbsim.rollout(free, integ, dt=1e-3, steps=1000, q0=q0, v0=v0)  # the same without mimic
        de_ref = np.abs(ref.energy - ref.energy[0]).max()
        report.append(f"{integ}: coupling drift {drift:.1e}, energy drift {de:.1e} J (without mimic {de_ref:.1e} J)")
        assert de < 10 * de_ref + 1e-9, report[-1]
    print("; ".join(report))
    # one Euler step from rest equals the dense coupled formula (the explicit step's own path)
    q, v = q0, np.zeros(3)
    st, _ = make("euler", m).step(pbsim.State.make(m, q, v), None, 1e-4)
    G, _ = m.mimic_coupling()
    M, h = pbsim.crba(m, q), pbsim.rnea(m, q, v, np.zeros(3))
    qdd = G @ np.linalg.solve(G.T @ M @ G, -G.T @ h)
    assert np.abs(st.v[0] / 1e-4 - qdd).max() < 1e-10 * np.abs(qdd).max()


def test_inconsistent_initial_state_is_projected_by_the_first_step(tmp_path):
    m = pbsim.load(gripper_urdf(tmp_path))
    st = pbsim.State.make(m, np.array([0.2, 0.01, 0.5]), np.array([0.0, 0.1, 0.7]))  # finger2 off
    for name in ("euler", "explicit_euler", "rk2", "rk3", "rk4"):
        new, _ = make(name, m).step(st, None, 1e-3)
        assert abs(new.q[0, 2] - (0.1 - new.q[0, 1])) < 1e-15 and abs(new.v[0, 2] + new.v[0, 1]) < 1e-15
    assert np.allclose(m.neutral(), [0.0, 0.0, 0.1])  # neutral and random configurations are coupled
    q = m.random_configuration(1)
    assert q[2] == pytest.approx(0.1 - q[1], abs=1e-15)


def test_cuda_simulator_runs_the_coupled_step(tmp_path):
    """rollout(device="cuda") under numba's CUDA simulator gives the CPU rollout (rk4)."""
    pytest.importorskip("numba.cuda")
    path = gripper_urdf(tmp_path)
    m = pbsim.load(path)
    q0, v0 = [0.9, 0.02, 0.08], [-1.0, 0.3, -0.3]
    cpu = pbsim.rollout(m, "rk4", dt=1e-3, steps=3, q0=q0, v0=v0, batch=2)
    code = (
        "import json, sys, numpy as np, pbsim\n"
        f"m = pbsim.load({path!r})\n"
        f"t = pbsim.rollout(m, 'rk4', dt=1e-3, steps=3, q0={q0}, v0={v0}, batch=2, device='cuda')\n"
        "print(json.dumps([np.asarray(t.q).tolist(), np.asarray(t.v).tolist()]))\n"
    )
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "models"), env.get("PYTHONPATH", "")])
    r = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    q, v = (np.array(a) for a in json.loads(r.stdout.strip().splitlines()[-1]))
    assert np.abs(q - cpu.q).max() < 1e-12 and np.abs(v - cpu.v).max() < 1e-12
    assert np.abs(q[..., 2] - (0.1 - q[..., 1])).max() < 1e-14


# ---------------------------------------------------------------------- integrators that cannot
def test_other_integrators_refuse_a_coupled_model(tmp_path):
    from pbsim.integrators.base import _entry, available

    m = pbsim.load(gripper_urdf(tmp_path))
    with pytest.raises(InputError, match=r"pbad does not support coupled mimic joints.*mimic='independent'"):
        make("pbad", m)
    with pytest.raises(InputError, match="pbad does not support coupled mimic joints"):
        pbsim.rollout(m, "pbad", dt=1e-3, steps=1)
    refused = []
    for name in available():
        if _entry(name)[0].supports_mimic:
            make(name, m)
            continue
        with pytest.raises(InputError, match="does not support coupled mimic joints"):
            make(name, m)
        refused.append(name)
    assert {"pbad", "pbad3", "pbad4", "pbfd", "variational", "ne_dry"} <= set(refused)
    ind = quiet_load(gripper_urdf(tmp_path), mimic="independent")
    assert ind.mimic == [] and ind.nv == 3
    make("pbad", ind)  # the uncoupled model is fine


# ---------------------------------------------------------------------- bad input
def _bad(tmp_path, mimic_attrs, finger2_type="prismatic", extra=""):
    """The generated gripper with finger2 rebuilt as ``finger2_type`` with ``<mimic mimic_attrs/>``,
    and ``extra`` links/joints after it."""
    body = Path(gripper_urdf(tmp_path, mimic=False)).read_text().split('<joint name="finger2"')[0]
    body += (
        f'<joint name="finger2" type="{finger2_type}"><parent link="palm"/><child link="right"/>'
        f'<axis xyz="0 1 0"/><mimic {mimic_attrs}/></joint>{extra}</robot>'
    )
    p = tmp_path / "bad.urdf"
    p.write_text(body)
    return str(p)


def test_bad_mimic_input_is_a_named_error(tmp_path):
    with pytest.raises(ParseError, match=r"joint 'finger2' mimics joint 'nope', which does not exist"):
        pbsim.load(_bad(tmp_path, 'joint="nope"'))
    with pytest.raises(ParseError, match=r"bad\.urdf:\d+: joint 'finger2': .*NaN or inf"):
        pbsim.load(_bad(tmp_path, 'joint="finger1" multiplier="nan"'))
    for t in ("floating", "spherical"):
        with pytest.raises(ParseError, match=rf"joint 'finger2' is a '{t}' joint; only 1-DOF"):
            pbsim.load(_bad(tmp_path, 'joint="finger1"', finger2_type=t))
    # a mimic of a ball joint, and a cycle finger2 -> finger3 -> finger2
    ball = (
        '<link name="tip"><inertial><mass value="0.1"/><inertia ixx="1e-3" iyy="1e-3" izz="1e-3" ixy="0" ixz="0" '
        'iyz="0"/></inertial></link><joint name="ball" type="spherical"><parent link="right"/><child link="tip"/></joint>'
    )
    with pytest.raises(
        ParseError, match=r"joint 'finger2' mimics joint 'ball': the mimicked joint 'ball' is a 'spherical'"
    ):
        pbsim.load(_bad(tmp_path, 'joint="ball"', extra=ball))
    cyc = (
        '<link name="tip"><inertial><mass value="0.1"/><inertia ixx="1e-3" iyy="1e-3" izz="1e-3" ixy="0" ixz="0" '
        'iyz="0"/></inertial></link><joint name="finger3" type="revolute"><parent link="right"/><child link="tip"/>'
        '<mimic joint="finger2"/></joint>'
    )
    with pytest.raises(ParseError, match=r"joint '(finger2|finger3)': mimic joints form a cycle"):
        pbsim.load(_bad(tmp_path, 'joint="finger3"', extra=cyc))
    with pytest.raises(ParseError, match="mimic must be one of"):
        pbsim.load(gripper_urdf(tmp_path), mimic="coupled")
    with pytest.raises(ParseError, match=r"joint 'finger2' mimics joint 'finger1'.*refused \(mimic='error'\)"):
        pbsim.load(gripper_urdf(tmp_path), mimic="error")


def test_chain_of_mimics_resolves_to_the_root_master(tmp_path):
    tip = (
        '<link name="tip"><inertial><mass value="0.1"/><inertia ixx="1e-3" iyy="1e-3" izz="1e-3" ixy="0" ixz="0" '
        'iyz="0"/></inertial></link><joint name="finger3" type="revolute"><parent link="right"/><child link="tip"/>'
        '<axis xyz="0 0 1"/><mimic joint="finger2" multiplier="2" offset="0.5"/></joint>'
    )
    m = pbsim.load(_bad(tmp_path, 'joint="finger1" multiplier="-1" offset="0.1"', extra=tip))
    # q3 = 2 (-q1 + 0.1) + 0.5 = -2 q1 + 0.7
    assert ("finger3", "finger1", -2.0, pytest.approx(0.7)) in m.mimic
    G, free = m.mimic_coupling()
    assert list(free) == [0, 1] and np.allclose(G, [[1, 0], [0, 1], [0, -1], [0, -2]])


# ---------------------------------------------------------------------- pbsim info
def test_pbsim_info_says_so(tmp_path, capsys):
    from pbsim.cli import main

    assert main(["info", gripper_urdf(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "1 mimic joint(s): 2 DOFs of their own" in out
    assert (
        "joint 'finger2' mimics 'finger1': q = -1*q_finger1 + 0.1 (no DOF of its own; carried in q, kept by the integrators)"
        in out
    )
    assert main(["info", "--json", gripper_urdf(tmp_path)]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["mimic"] == [{"joint": "finger2", "master": "finger1", "multiplier": -1.0, "offset": 0.1}]


def test_urdf_export_writes_the_mimic_back(tmp_path):
    from pbsim.io.export_urdf import write_urdf

    m = pbsim.load(gripper_urdf(tmp_path))
    out = tmp_path / "out" / "gripper.urdf"
    out.parent.mkdir()
    write_urdf(m, str(out))
    assert pbsim.load(str(out)).mimic == m.mimic
