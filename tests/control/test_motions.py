"""pbsim.control.motions: discovery and make_motion, `pbsim rollout/view --motion`, and the Robosimian
jump (mirror-symmetric; leaves the ground and stays upright under pbfd), the generated spider's jump
and trot (well-formed: periodic, symmetric; no simulation).  The Robosimian tests skip when
../shared is absent."""

from __future__ import annotations

import json

import numpy as np
import pytest

import pbsim
from pbsim.control import motions
from pbsim.errors import InputError
from pbsim_models.poses import symmetrize_robosimian
from tests.conftest import robosimian_urdf


def test_motion_names_are_discovered():
    names = motions.motion_names()
    for n in ("robosimian_jump", "robosimian_walk", "robosimian_gait", "humanoid_gait", "dog_trot", "sinusoid"):
        assert n in names
    for n in ("make_motion", "motion_names", "quat_mul", "default_gains", "robosimian_crouch_table", "jump_profile"):
        assert n not in names


def test_unknown_motion_lists_the_valid_names(capsys):
    import pbsim_models

    with pytest.raises(InputError, match="valid motions: .*robosimian_jump"):
        motions.make_motion(pbsim_models.by_name("chain10"), "jumpp")
    from pbsim.cli import main

    assert main(["rollout", "chain10", "--motion", "nope", "--steps", "1"]) == 2
    err = capsys.readouterr().err
    assert "unknown motion 'nope'" in err and "robosimian_walk" in err


def test_motion_list_prints_the_names(capsys):
    from pbsim.cli import main

    with pytest.raises(SystemExit) as e:
        main(["rollout", "--motion", "list"])
    assert e.value.code in (0, None)
    out = capsys.readouterr().out
    assert all(n in out for n in motions.motion_names())


def test_make_motion_default_gains():
    import pbsim_models

    m = pbsim_models.by_name("chain10")
    ref = motions.make_motion(m, "sinusoid")
    kp, kd = motions.default_gains(m)
    assert np.allclose(ref.kp, kp) and np.allclose(ref.kd, kd) and ref.mode == "spd"
    assert np.allclose(motions.make_motion(m, "sinusoid", kp=5.0).kp, 5.0)


def _robosimian(symmetric=True):
    m = pbsim.load(str(robosimian_urdf(active=True)), floating_base=True)
    if symmetric:
        symmetrize_robosimian(m)
    return m


def test_robosimian_jump_reference_is_mirror_symmetric():
    m = _robosimian()
    ref = motions.robosimian_jump(m)
    feet = [m.body_index(f"limb{k}_link7") for k in range(1, 5)]
    S = np.array([[1, -1, 1], [-1, -1, 1], [-1, 1, 1], [1, 1, 1.0]])  # limbs 1..4 mirrored onto limb 4
    heights = []
    for t in np.linspace(0.0, 2.0, 21):
        q = ref.q_at(t)
        q[:3], q[3:7] = 0.0, (1.0, 0.0, 0.0, 0.0)
        P = pbsim.forward_kinematics(m, q)[feet, :3, 3]
        assert np.abs(P * S - P[3]).max() < 1e-4, t
        heights.append(P[3, 2])
    assert np.ptp(heights) > 0.2  # it crouches 0.2 m and extends 0.06 m


def test_cli_rollout_robosimian_jump():
    from pbsim.cli import main
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = main([
            "rollout", str(robosimian_urdf(active=True)), "--floating-base", "--motion", "robosimian_jump",
            "--ground", "plane", "--integrator", "euler", "--dt", "0.001", "--steps", "20", "--quiet", "--json",
        ])  # fmt: skip
    assert rc in (0, None)
    out = json.loads(buf.getvalue())
    assert out["steps"] == 20 and out["nv"] == 38 and out.get("diverged", 0) == 0
    assert np.isfinite(out["energy_end"])


def test_viewer_session_tracks_the_motion():
    pytest.importorskip("pbsim_viewer")
    from pbsim_viewer.app import make_session

    s = make_session(str(robosimian_urdf(active=True)), floating=True, integrator="euler", dt=2e-3,
                     motion="robosimian_jump")  # fmt: skip
    for _ in range(5):
        assert s.step_once(), s.message
    assert np.allclose(s.q_ref[7:], s.motion.q_at(s.time)[7:])
    c = s.control()
    assert c.mode == "spd" and np.allclose(c.kp[6:], 30.0 * s.model.total_mass)


def test_robosimian_jump_leaves_the_ground_upright_pbfd():
    """One jump (1.3 s) under pbfd at dt 0.025, kp 30 M, kd 0.3 M, feet on a plane: the lowest foot
    point rises > 1 cm above the plane (measured 2.8 cm) and the torso stays within 1 deg of level."""
    from pbsim.contact import make_scene, sample_contact_points
    from pbsim.integrators import State, make

    m = _robosimian()
    pts = sample_contact_points(m, bodies=[f"limb{k}_link7" for k in range(1, 5)])
    scene = make_scene(m, ground="plane", mu=0.8, points=pts)
    M = float(m.total_mass)
    ref = motions.make_motion(m, "robosimian_jump", kp=30 * M, kd=0.3 * M, dt=0.025)
    q0 = ref.q_at(0.0)
    q0[:3] = 0.0
    X = pbsim.contact_query(m, scene, q0)["X"][0]
    q0[2] = -float(X[:, 2].min())
    integ = make("pbfd", m, scene)
    s = State.make(m, q0)
    Q = []
    for _ in range(52):
        s, d = integ.step(s, ref(s.t, s), 0.025)
        assert np.isfinite(s.q).all()
        Q.append(s.q[0].copy())
    Q = np.array(Q)
    clearance = pbsim.contact_query(m, scene, Q)["X"][:, :, 2].min(axis=1)
    assert clearance.max() > 0.01, clearance.max()
    tilt = np.degrees(np.arccos(np.clip(1 - 2 * (Q[:, 4] ** 2 + Q[:, 5] ** 2), -1, 1)))
    assert tilt.max() < 1.0, tilt.max()


# ---------------------------------------------------------------- the spider (our substitute for paper 002's Spider)
def test_spider_motions_are_registered_and_well_formed():
    import pbsim_models
    from pbsim_models.creatures import spider_standing

    m = pbsim_models.spider()
    assert {"spider_jump", "spider_walk"} <= set(motions.motion_names())
    for name in ("spider_jump", "spider_walk"):
        ref = motions.make_motion(m, name, kp=30 * 4.0, kd=0.3 * 4.0, root="passive", dt=0.01)
        Q = np.array([ref.q_at(t) for t in np.linspace(0.0, 4.0, 81)])
        assert Q.shape == (81, m.nq) and np.isfinite(Q).all()
        assert np.allclose(Q[0], spider_standing(m), atol=1e-12)  # starts standing on the plane, at rest
        c = ref.control(0.5)
        assert c.mode == "spd" and np.allclose(c.kp[:6], 0.0) and np.allclose(c.kp[6:], 120.0)
        assert np.isfinite(c.v_ref).all() and c.q_ref.shape == (m.nq,)
    with pytest.raises(InputError, match="not a pbsim_models.spider"):
        motions.spider_jump(pbsim_models.by_name("chain10"))


def test_spider_jump_is_periodic_symmetric_and_keeps_the_feet_over_their_ground_points():
    import pbsim_models
    from pbsim_models.creatures import spider_contact_points

    m = pbsim_models.spider()
    ref = motions.spider_jump(m)  # period 2 s, crouch 0.1 m, extend 0.04 m
    pts = spider_contact_points(m)
    feet = np.arange(8, 16, 2)  # the shin tips
    legs = [[m.idx_q(f"hip{k}_0").start, m.idx_q(f"hip{k}_1").start, m.idx_q(f"knee{k}").start] for k in range(4)]
    S = np.array([[1, 1, 1], [-1, 1, 1], [-1, -1, 1], [1, -1, 1.0]])  # legs 0..3 mirrored onto leg 0
    dz = []
    for t in np.linspace(0.0, 2.0, 41):
        q = ref.q_at(t)
        assert np.allclose(q, ref.q_at(t + 2.0)) and np.allclose(q, ref.q_at(t + 8.0))  # 5 jumps in 10 s
        A = q[legs]
        assert np.allclose(A, A[0]) and np.allclose(A[:, 1], 0.0)  # every leg the same pitch/knee, no yaw
        q[:3], q[3:7] = 0.0, (1.0, 0.0, 0.0, 0.0)
        T = pbsim.forward_kinematics(m, q)
        P = np.array(
            [T[pts["points_body"][i], :3, :3] @ pts["points_local"][i] + T[pts["points_body"][i], :3, 3] for i in feet]
        )
        assert np.abs(P * S - P[0]).max() < 1e-12  # mirror-symmetric front-back and left-right
        dz.append(P[0, 2])
        assert np.allclose(P[0, :2], [0.39698191, 0.39698191], atol=1e-6)  # the foot stays over its ground point
    dz = np.array(dz) - dz[0]
    assert np.isclose(dz.max(), 0.1, atol=1e-3) and np.isclose(dz.min(), -0.04, atol=1e-3)  # crouch / push


def test_spider_walk_is_a_trot_with_the_stated_period():
    import pbsim_models

    m = pbsim_models.spider()
    ref = motions.spider_walk(m)  # period 1 s, blended in over 1 s
    legs = [[m.idx_q(f"hip{k}_0").start, m.idx_q(f"hip{k}_1").start, m.idx_q(f"knee{k}").start] for k in range(4)]
    for t in np.linspace(1.0, 2.0, 21):
        q, q1 = ref.q_at(t), ref.q_at(t + 1.0)
        assert np.allclose(q[7:], q1[7:])  # periodic joints after the blend-in
        assert np.allclose(q1[0] - q[0], ref.q_at(3.0)[0] - ref.q_at(2.0)[0])  # the root target advances steadily
        A = q[legs]
        assert np.allclose(A[0, [0, 2]], A[2, [0, 2]]) and np.allclose(A[1, [0, 2]], A[3, [0, 2]])  # diagonal pairs
        assert np.isclose(A[0, 1], -A[2, 1]) and np.isclose(A[1, 1], -A[3, 1])  # left/right yaw mirrored
        h = ref.q_at(t + 0.5)[legs]  # half a period later the pairs have swapped
        assert np.allclose(h[1], A[0]) and np.allclose(h[0], A[1])  # (legs 0 and 1 are both left legs)
    assert ref.q_at(3.0)[0] > 0.3  # the root target moves along +x
