"""Session (no GL): parameters, every registered integrator, failures pause at the last good state."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import pbsim
from pbsim.integrators.base import Diagnostics
from pbsim_models import chain
from pbsim_viewer.session import DT_MAX, DT_MIN, Session
from tests.conftest import pybullet_file

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def session():
    return Session(chain(3), dt=2e-3, kp=50.0, kd=2.0)


def test_every_integrator_50_steps_and_switch_mid_run(session):
    s = session
    for j in range(s.model.nv):
        s.set_target(j, 0.3)
    for name in pbsim.integrators.available():
        assert s.set_integrator(name), s.message
        for _ in range(50):
            assert s.step_once(), s.message
        s.set_dt(min(s.dt * 1.5, 0.02))  # dt change mid-run (capped: with 13+ methods 1.5^k reached 0.08 s,
        # where the ne_dry baseline -- explicit Newton-Euler -- rightly diverges)
    assert s.steps == 50 * len(pbsim.integrators.available())
    assert np.all(np.isfinite(s.q))
    # the history keeps the last ``maxlen`` steps (fewer than 50 x the number of methods, 13+)
    assert len(s.hist_energy) == min(s.steps, s.hist_energy.maxlen)
    assert np.all(np.isfinite(s.histories()["energy"]))
    # SPD pulls the joints towards the targets: tracking error fell from 0.3 rad
    assert s.histories()["tracking_error"][-1] < 0.3


def test_every_integrator_on_humanoid_fixed_base():
    from tests.conftest import pybullet_file

    s = Session(pbsim.load(pybullet_file("humanoid/humanoid.urdf"), floating_base=False), dt=1e-3)
    for k, name in enumerate(pbsim.integrators.available()):
        assert s.set_integrator(name), s.message  # a failed switch would keep stepping the old one
        assert s.integrator_name == name
        t0, q0 = s.time, s.q.copy()
        for _ in range(50):
            assert s.step_once(), s.message
        assert s.steps == 50 * (k + 1) and not s.failed  # the steps happened and were kept
        assert s.time == pytest.approx(t0 + 50 * 1e-3, rel=1e-9), name
        # the humanoid moved under gravity: measured max |dq| 5.9e-3 (euler) to 3.1e-2 per 50 steps
        assert np.all(np.isfinite(s.q)) and np.abs(s.q - q0).max() > 1e-3, name


def test_tracking_error_matches_pbsim_difference():
    from tests.conftest import pybullet_file

    s = Session(pbsim.load(pybullet_file("humanoid/humanoid.urdf"), floating_base=False))
    rng = np.random.default_rng(0)
    q = s.model.random_configuration(rng)
    for j in np.flatnonzero(s.actuated):
        s.set_target(int(j), rng.uniform(-0.5, 0.5))
    e = pbsim.difference(s.model, s.q_ref, q)
    assert s.tracking_error(q) == pytest.approx(np.sqrt(np.mean(e * e)), rel=1e-9)


def test_parameters_clamped(session):
    s = session
    assert s.set_dt(10.0) == DT_MAX and s.set_dt(0.0) == DT_MIN and s.set_dt(float("nan")) == DT_MIN
    s.set_kp(123.0)
    s.set_kd(4.0, dof=1)
    c = s.control()
    assert c.mode == "spd" and np.allclose(c.kp, 123.0) and c.kd[1] == 4.0 and c.kd[0] == 2.0
    s.set_kp(-5.0)
    assert s.kp_global == 0.0


def test_floating_base_dofs_not_actuated():
    from tests.conftest import pybullet_file

    s = Session(pbsim.load(pybullet_file("humanoid/humanoid.urdf"), floating_base=True), kp=10.0)
    assert not s.actuated[:6].any() and s.actuated[6:].all()
    s.set_kp(99.0)
    s.set_kp(5.0, dof=0)  # ignored: the base has no actuator
    assert np.all(s.kp[:6] == 0.0) and np.all(s.kp[6:] == 99.0)
    assert s.dof_names[0].startswith("base_root") and len(s.dof_names) == s.model.nv


def test_unknown_integrator_keeps_running(session):
    s = session
    old = s.integrator_name
    assert not s.set_integrator("no-such-method")
    assert s.integrator_name == old and "no-such-method" in s.message
    assert s.step_once()


class _Exploding:
    """Stand-in integrator: NaN after ``n`` good steps, or a non-converged solve, or an exception."""

    def __init__(self, real, mode, n=3):
        self.real, self.mode, self.n = real, mode, n

    def step(self, state, control, dt):
        new, diag = self.real.step(state, control, dt)
        self.n -= 1
        if self.n >= 0:
            return new, diag
        if self.mode == "nan":
            new.q[:] = np.nan
            return new, Diagnostics(diag.energy, np.array([True]))
        if self.mode == "noconv":
            return new, Diagnostics(
                diag.energy,
                np.array([False]),
                iterations=np.array([50]),
                residual=np.array([0.3]),
                converged=np.array([False]),
            )
        raise FloatingPointError("overflow in kernel")


@pytest.mark.parametrize("mode,why", [("nan", "NaN"), ("noconv", "did not converge"), ("raise", "overflow")])
def test_failure_pauses_at_last_good_state(session, mode, why):
    s = session
    s._integrator = _Exploding(s._integrator, mode)
    s.max_step_time = 60.0  # no wall-time cut-off on a busy machine
    s.play()
    s.update(0.1)  # wants 50 steps, fails at the 4th
    assert not s.playing and s.failed and s.steps == 3
    assert np.all(np.isfinite(s.q)) and s.time == pytest.approx(3 * s.dt)
    assert s.integrator_name in s.message and why in s.message and "t = 0.0060" in s.message
    s.reset()
    assert s.message == "" and s.steps == 0


def test_real_divergence_is_caught():
    s = Session(chain(3), integrator="explicit_euler", dt=0.2, kp=0.0, kd=0.0)
    s.q0[:] = 1.0
    s.reset()
    for _ in range(2000):
        if not s.step_once():
            break
    assert s.failed and "explicit_euler" in s.message and np.all(np.isfinite(s.q))


def test_pbsim_and_viewer_import_without_gl():
    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('pyglet', 'OpenGL', 'imgui_bundle'):\n"
        "            raise ImportError('blocked ' + name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "import pbsim, pbsim_viewer\n"
        "print('ok', pbsim_viewer.Session.__name__)\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"PYTHONPATH": f"{ROOT}:{ROOT / 'viewer'}:{ROOT / 'models'}", "PATH": "/usr/bin:/bin"},
    )
    assert r.returncode == 0 and "ok Session" in r.stdout, r.stderr


def test_place_on_terrain_without_gl():
    from tests.conftest import robosimian_urdf, terrain_file

    from pbsim_viewer.app import place_on_terrain, terrain_top, terrain_triangles
    from pbsim_viewer.shapes import primitive_mesh

    tris = terrain_triangles(terrain_file("drc_rough_terrain.stl"))
    s = Session(pbsim.load(robosimian_urdf(), floating_base=True))
    place_on_terrain(s, tris, clearance=0.02)
    T = pbsim.forward_kinematics(s.model, s.q)
    pts = np.concatenate(
        [
            t.reshape(-1, 3) @ T[g.body, :3, :3].T + T[g.body, :3, 3]
            for g in s.model.geoms
            if len(t := primitive_mesh(g))
        ]
    )
    # the lowest robot point sits 2 cm above the terrain under the robot's footprint
    top = terrain_top(tris, pts[:, 0].min(), pts[:, 0].max(), pts[:, 1].min(), pts[:, 1].max())
    assert pts[:, 2].min() - top == pytest.approx(0.02, abs=1e-9)
    # and that bound really is above every terrain point there: sample the triangles' interiors
    rng = np.random.default_rng(1)
    w = rng.dirichlet(np.ones(3), size=(len(tris), 8))
    samp = np.einsum("fsk,fkd->fsd", w, tris).reshape(-1, 3)
    inside = (
        (samp[:, 0] > pts[:, 0].min())
        & (samp[:, 0] < pts[:, 0].max())
        & (samp[:, 1] > pts[:, 1].min())
        & (samp[:, 1] < pts[:, 1].max())
    )
    assert inside.sum() > 10 and samp[inside, 2].max() <= top + 1e-12


def test_cluster_decimate_keeps_shape():
    import trimesh

    from pbsim_viewer.shapes import cluster_decimate

    m = trimesh.creation.icosphere(subdivisions=5, radius=0.5)
    tris = np.asarray(m.vertices)[np.asarray(m.faces)]
    d = cluster_decimate(tris, 0.05)
    assert len(d) < len(tris) / 5
    r = np.linalg.norm(d.reshape(-1, 3), axis=1)
    assert np.all(np.abs(r - 0.5) < 0.05)
    area = 0.5 * np.linalg.norm(np.cross(d[:, 1] - d[:, 0], d[:, 2] - d[:, 0]), axis=1).sum()
    assert area == pytest.approx(4 * np.pi * 0.25, rel=0.05)


# ---------------------------------------------------------------- physical viewer: contact scene
def _run(s, steps):
    lo = np.inf
    for _ in range(steps):
        assert s.step_once(), s.message
        lo = min(lo, float(s.q[:3] @ -np.asarray(s.model.gravity) / 9.81))
    assert np.all(np.isfinite(s.q)) and np.all(np.isfinite(s.state.v))
    return lo


def test_robosimian_stands_on_ground_plane_under_spd():
    """Default session: floating base (the file decides), plane contact, SPD holding the standing
    pose with mass-scaled gains: the torso stays up and the joints track the pose."""
    from tests.conftest import robosimian_urdf

    from pbsim_viewer.app import contact_available, make_session

    s = make_session(robosimian_urdf(), integrator="euler", dt=2e-3)
    assert s.model.floating_base and contact_available(s.model, s.scene)
    z0 = float(s.q[2])
    assert 0.85 < z0 < 1.0  # placed: feet 0.78 m below the torso, 1 cm above the plane
    lo = _run(s, 300)  # 0.6 s
    assert lo > z0 - 0.08, (lo, z0)  # stands: sinks by the contact's static penetration + leg sag only
    assert s.tracking_error() < 0.03
    # the same drop without the ground falls freely: the bound above can fail
    s2 = make_session(robosimian_urdf(), integrator="euler", dt=2e-3, ground="none")
    assert not contact_available(s2.model, s2.scene)
    assert _run(s2, 300) < z0 - 1.0


def test_humanoid_y_up_stands_on_plane():
    """--up y: gravity (0, -9.81, 0), the plane faces +y, the DeepMimic humanoid lands on its feet."""
    from pbsim_viewer.app import make_session

    s = make_session(pybullet_file("humanoid/humanoid.urdf"), integrator="euler", dt=2e-3, up="y")
    assert np.allclose(s.model.gravity, [0, -9.81, 0])
    plane = [e for e in s.scene.all_environment() if type(e).__name__ == "Plane"][0]
    assert np.allclose(plane.normal, [0, 1, 0])
    y0 = float(s.q[1])
    lo = _run(s, 250)  # 0.5 s
    assert lo > y0 - 0.25, (lo, y0)


def test_up_auto_detects_humanoid():
    from tests.conftest import robosimian_urdf

    from pbsim_viewer.poses import detect_up

    assert detect_up(pbsim.load(pybullet_file("humanoid/humanoid.urdf"))) == "y"
    assert detect_up(pbsim.load(robosimian_urdf())) == "z"


def test_terrain_goes_into_the_physics_scene():
    from tests.conftest import robosimian_urdf, terrain_file

    from pbsim.contact import MeshTerrain
    from pbsim_viewer.app import make_session, terrain_top, terrain_triangles

    f = terrain_file("drc_rough_terrain.stl")
    s = make_session(robosimian_urdf(), integrator="euler", dt=2e-3, terrain=f)
    assert any(isinstance(e, MeshTerrain) for e in s.scene.environment)
    # placed over the terrain (20 % along it), lowest contact point 1 cm above the terrain top there
    X = pbsim.contact_query(s.model, s.scene, s.q)["X"][0]
    tris = terrain_triangles(f)
    top = terrain_top(tris, X[:, 0].min(), X[:, 0].max(), X[:, 1].min(), X[:, 1].max())
    assert (X[:, 2] - s.scene.contact_points().radius).min() - top == pytest.approx(0.01, abs=1e-9)
    z0 = float(s.q[2])
    lo = _run(s, 150)
    assert lo > z0 - 0.1
    assert pbsim.contact_diagnostics(s.model, s.scene, s.q)["active"][0] > 0  # it landed on the terrain


def test_standing_pose_puts_robosimian_feet_under_the_shoulders():
    from tests.conftest import robosimian_urdf

    from pbsim.control.motions import default_gains
    from pbsim_viewer.poses import standing_pose

    m = pbsim.load(robosimian_urdf())
    T = pbsim.forward_kinematics(m, standing_pose(m))
    feet = np.array([T[m.body_names.index(f"limb{k}_link7"), :3, 3] for k in range(1, 5)])
    assert np.all(feet[:, 2] < -0.7)  # all four feet below the torso ...
    assert np.ptp(feet[:, 2]) < 1e-5  # ... at one height
    assert np.allclose(np.abs(feet[:, :2]), np.abs(feet[0, :2]), atol=0.01)  # symmetric rectangle
    kp, kd = default_gains(m)
    assert kp == pytest.approx(30 * m.total_mass) and kd == pytest.approx(m.total_mass)


def test_fixed_base_ground_plane_below_the_robot():
    """--fixed: the plane goes under the lowest contact point, so a hanging robot is not pushed."""
    from tests.conftest import robosimian_urdf

    from pbsim_viewer.app import make_session

    s = make_session(robosimian_urdf(), floating=False, integrator="euler", dt=2e-3)
    plane = [e for e in s.scene.all_environment() if type(e).__name__ == "Plane"][0]
    assert plane.offset < -0.7  # the standing pose's feet hang 0.78 m below the fixed torso
    assert pbsim.contact_diagnostics(s.model, s.scene, s.q)["active"][0] == 0


def test_first_use_notice_once_per_integrator(session):
    """Before an integrator's first step the viewer draws one frame with a notice (the step may
    compile for a while); after it the notice says what compiling cost, or goes away if the
    kernels came from the cache; switching integrator arms it again."""
    s = session
    s.play()
    assert s.first_use_notice() and s.notice.startswith("loading kernels for euler")
    assert not s.first_use_notice()  # once
    assert s.update(0.01) >= 1
    assert s.notice == "" or s.notice.startswith("compiled kernels for euler in")
    assert s.compile_s >= 0.0 and not s.first_use_notice()
    assert s.set_integrator("rk4") and s.first_use_notice() and "rk4" in s.notice


def test_view_takes_the_same_model_arguments_as_rollout():
    """`pbsim view` parses MODEL and the base/inertia/package flags with pbsim.cli's own
    add_model_args (generated names load; --float/--fixed remain as aliases)."""
    from pbsim.cli import build_parser as cli_parser
    from pbsim.cli import load_model
    from pbsim_viewer.app import build_parser, make_session

    a = build_parser().parse_args(["chain3", "--fixed-base", "--fix-inertia", "--package", "x=/tmp"])
    r = cli_parser().parse_args(["rollout", "chain3", "--fixed-base", "--fix-inertia", "--package", "x=/tmp"])
    for k in ("model", "floating_base", "fix_inertia", "package"):
        assert getattr(a, k) == getattr(r, k), k
    assert build_parser().parse_args(["chain3", "--float"]).floating_base is True
    assert build_parser().parse_args(["chain3", "--fixed"]).floating_base is False
    assert build_parser().parse_args(["chain3"]).floating_base is None
    s = make_session(load_model("chain3"), ground=None)
    assert s.model.name == load_model("chain3").name and s.model.nv == 3


def test_actuator_sliders_drive_the_files_actuators():
    """The viewer's actuator sliders go through Control(ctrl=...), the path of `pbsim rollout --ctrl`."""
    import os

    gym = pytest.importorskip("gymnasium")
    path = os.path.join(os.path.dirname(gym.__file__), "envs", "mujoco", "assets", "reacher.xml")
    if not os.path.isfile(path):
        pytest.skip("gymnasium has no reacher.xml")
    m = pbsim.load(path)
    s = Session(m, integrator="euler", dt=1e-3)
    assert s.model.nu == 2 and s.control().mode == "spd"
    s.drive_actuators = True
    s.set_ctrl(0, 5.0)  # clamped to ctrlrange [-1, 1]
    assert s.ctrl[0] == 1.0 and s.ctrl_range(0) == (-1.0, 1.0)
    k = s.control().kernel_arrays(m, 1)
    assert np.allclose(k.tau, pbsim.Control(ctrl=np.array([1.0, 0.0])).kernel_arrays(m, 1).tau)


# ---------------------------------------------------------------- issue #20: history, timing, edits, keyframes
def test_divergence_rewinds_to_the_last_state_within_the_rule():
    """Explicit Euler on a 3-link chain at dt 0.2 s with stiff gains blows up; the session pauses at
    the newest buffered state whose K + U is within the shared rule's bound (10 E_model above the
    start, the actuator allowance left out), not at the state just before the flagged step."""
    from pbsim.integrators import divergence as dv

    s = Session(chain(3), integrator="explicit_euler", dt=0.1, kp=5e3, kd=0.0)
    s.q0[:] = 1.0
    s.reset()
    e0 = float(dv.reference_energy(s.model, s.state)[0])
    for _ in range(500):
        if not s.step_once():
            break
    assert s.failed and "diverged" in s.message and "paused at" in s.message
    e = float(dv.reference_energy(s.model, s.state)[0] - dv.spring_energy(s.model, s.state.q)[0])
    assert e - e0 <= 10 * dv.energy_scale(s.model) + 1e-9
    assert s.ring_verdicts()[-1] and np.all(np.isfinite(s.q))
    assert s.ring[-1][1] == s.steps and s.time == pytest.approx(s.steps * s.dt)


def test_scrub_and_step_back_then_continue(session):
    s = session
    for _ in range(10):
        assert s.step_once()
    q5 = s.ring[5][0].q.copy()
    s.scrub(5)
    assert s.steps == 5 and np.array_equal(s.state.q, q5) and not s.playing
    assert s.step_back() and s.steps == 4
    assert s.step_once() and s.steps == 5 and len(s.ring) == 6  # the buffered future is dropped
    assert np.allclose(s.state.q, q5, atol=1e-12)  # deterministic replay of the same step


def test_noconvergence_pauses_once_then_play_continues(session):
    s = session
    s._integrator = _Exploding(s._integrator, "noconv", n=2)
    s.max_step_time = 60.0
    s.play()
    s.update(0.02)
    assert s.failed and not s.playing and "did not converge" in s.message and s.steps == 2
    s.play()
    assert s.update(0.02) >= 5 and s.playing and s.unconverged >= 5 and "did not converge" in s.notice


def test_real_time_capped_and_rtf_measured():
    """dt = 0.05 s at 60 frames/s: one step every third frame (real time, not 3x); the readout is
    simulated over wall time, also when the frames come slower than the wall clock says."""
    s = Session(chain(3), integrator="pbad", dt=0.05, kp=0.0, kd=0.0)
    s.max_step_time = float("inf")  # no wall-clock cut per frame: the test must not depend on the load
    s.play()
    n = sum(s.update(1 / 60, now=k / 60) for k in range(60))
    assert n == 20 and s.time == pytest.approx(1.0), s.message
    assert s.rtf == pytest.approx(1.0, rel=0.06)
    s.reset()
    s.set_dt(2e-3)
    s.play()
    s.real_time_factor_target = 0.5
    for k in range(60):
        s.update(1 / 60, now=k / 60)
    assert s.time == pytest.approx(0.5, abs=2.5e-3) and s.rtf == pytest.approx(0.5, rel=0.06)
    # frames 0.28 s apart that the viewer clamps to 0.1 s of simulation: rtf 0.36, not 1
    s.reset()
    s.real_time_factor_target = 1.0
    s.play()
    for k in range(8):
        s.update(0.1, now=0.28 * k)
    assert s.rtf == pytest.approx(0.1 / 0.28, rel=0.05)


def test_step_requests_run_in_update(session):
    s = session
    s.step_requests = 2
    assert s.update(0.0) == 2 and s.steps == 2 and not s.playing


def test_joint_sliders_set_q_and_keyframe_round_trip(tmp_path):
    m = pbsim.load(pybullet_file("humanoid/humanoid.urdf"), floating_base=True)
    s = Session(m, integrator="euler", dt=1e-3)
    rows = s.q_sliders()
    names = [r[1] for r in rows]
    assert any(n.endswith(".z") for n in names) and len(rows) >= 4
    iq, _, lo, hi = rows[-1]
    s.set_q(iq, 0.5 * (lo + hi) + 0.1)
    assert s.q[iq] == pytest.approx(0.5 * (lo + hi) + 0.1) and s.state.energy_ref is None
    for _ in range(5):
        assert s.step_once()
    s.set_target(int(np.flatnonzero(s.actuated)[0]), 0.2)
    s.set_kp(321.0)
    path = s.save_keyframe(tmp_path / "kf")
    q, v, t, tgt, kp = s.state.q.copy(), s.state.v.copy(), s.time, s.target.copy(), s.kp.copy()
    for _ in range(5):
        s.step_once()
    s.reset()
    s.load_keyframe(path)
    assert np.array_equal(s.state.q, q) and np.array_equal(s.state.v, v) and s.time == t
    assert np.array_equal(s.target, tgt) and np.array_equal(s.kp, kp)
    # stepping on from the loaded keyframe == stepping on from the saved state
    s2 = Session(m, integrator="euler", dt=1e-3)
    s2.load_keyframe(path)
    assert s.step_once() and s2.step_once() and np.array_equal(s.state.q, s2.state.q)
    with pytest.raises(pbsim.InputError, match="nq"):
        Session(chain(3)).load_keyframe(path)


def test_drag_force_goes_through_body_wrench_torque(session):
    from pbsim.control import body_wrench_torque

    s = session
    s.perturb = (2, np.array([0.1, 0.0, 0.0]), np.array([0.0, 5.0, -3.0]))
    tau = s.control().tau
    assert np.allclose(tau, body_wrench_torque(s.model, s.q, 2, force=[0, 5, -3], point=[0.1, 0, 0]))
    s.perturb = None
    assert s.control().tau is None


def test_body_info_and_contact_forces_hold_the_weight(tmp_path):
    """A 2 kg box resting on the plane (euler, 1 ms): the penalty contact forces carry its weight
    (mean over 0.2 s within 2 %), and the selected body's info lists them."""
    from pbsim_viewer.app import make_session

    p = tmp_path / "box.urdf"
    p.write_text(
        '<robot name="box"><link name="box"><inertial><mass value="2"/>'
        '<inertia ixx="0.02" iyy="0.02" izz="0.02" ixy="0" ixz="0" iyz="0"/></inertial>'
        '<collision><geometry><box size="0.2 0.2 0.2"/></geometry></collision></link></robot>'
    )
    s = make_session(str(p), integrator="euler", dt=1e-3, floating=True)
    fz = []
    for k in range(1000):
        assert s.step_once(), s.message
        if k >= 800:
            fz.append(sum(c["force"][2] for c in s.contact_forces()))
    assert np.mean(fz) == pytest.approx(2.0 * 9.81, rel=0.02)
    info = s.body_info(0)
    assert info["name"] == "box" and info["mass"] == pytest.approx(2.0)
    assert len(info["contacts"]) >= 3 and info["position"].shape == (3,)


def test_integrator_problems_name_a_reason():
    s = Session(chain(3))
    probs = s.integrator_problems()
    assert set(probs) == set(pbsim.integrators.available())
    assert probs["euler"] is None
    assert all(p is None or isinstance(p, str) and p for p in probs.values())


def test_failed_switch_message_cleared_by_a_successful_one():
    """A switch that fails keeps the old integrator and shows why; the next successful switch
    clears the message (issue #20: the red message stayed up and shifted the panel)."""
    s = Session(chain(3), integrator="euler")
    assert not s.set_integrator("no_such_method")
    assert s.integrator_name == "euler" and "no_such_method" in s.message
    assert s.set_integrator("rk4") and s.integrator_name == "rk4" and s.message == ""


def test_view_cli_negative_camera_base_pose_up_auto():
    """`--camera -60,10,4` parses (argparse took it for an option); --base-pose sets the floating
    base (quaternion normalized, lifted only out of the ground); --up auto is the default and keeps
    an MJCF's gravity."""
    from pbsim_viewer.app import build_parser, join_negative_values, make_session

    a = build_parser().parse_args(
        join_negative_values(["chain3", "--camera", "-60,10,4", "--base-pose", "-1,2,3,1,0,0,0"])
    )
    assert a.camera == "-60,10,4" and a.base_pose == "-1,2,3,1,0,0,0" and a.up == "auto"
    m = pbsim.load(pybullet_file("humanoid/humanoid.urdf"), floating_base=True)
    s = make_session(m, ground="plane", base_pose=[0.5, 0.3, 10.0, 2.0, 0.0, 0.0, 0.0])
    assert s.q0[0] == pytest.approx(0.5) and s.q0[3:7] == pytest.approx([1, 0, 0, 0])
    assert np.allclose(s.model.gravity, [0, -9.81, 0])  # auto: the DeepMimic humanoid is y-up
    with pytest.raises(pbsim.InputError, match="floating base"):
        make_session(chain(3), ground=None, base_pose=[0, 0, 0, 1, 0, 0, 0])
    with pytest.raises(pbsim.InputError, match="x,y,z,qw"):
        make_session(m, ground=None, base_pose=[0, 0, 0])


def test_drag_force_adds_to_a_motions_control():
    """In a `--motion` session the push's J^T f adds to the motion's SPD control (it was dropped)."""
    from pbsim.control import body_wrench_torque
    from pbsim.control.motions import make_motion
    from pbsim_viewer.motion import MotionSession

    m = chain(3)
    s = MotionSession(m, make_motion(m, "sinusoid"), integrator="euler", dt=1e-3)
    base = s.control()
    assert base.mode == "spd" and base.tau is None
    s.perturb = (2, np.array([0.1, 0.0, 0.0]), np.array([0.0, 5.0, -3.0]))
    c = s.control()
    assert c.mode == "spd" and np.allclose(c.q_ref, base.q_ref)
    assert np.allclose(c.tau, body_wrench_torque(m, s.q, 2, force=[0, 5, -3], point=[0.1, 0, 0]))


@pytest.mark.parametrize("yaw, pitch", [(-60.0, 20.0), (0.0, 0.0), (90.0, 60.0)])
def test_default_framing_shows_the_whole_box(yaw, pitch):
    """Viewer.frame_box: every corner of a tall body's box (the humanoid's 0.4 x 0.3 x 1.8 m) projects
    inside the view at 16:9 and 4:3, whatever the orbit (issue #20: the humanoid's head was cut off)."""
    from types import SimpleNamespace

    from pbsim_viewer.app import Viewer
    from pbsim_viewer.camera import OrbitCamera

    lo, hi = np.array([-0.2, -0.15, 0.0]), np.array([0.2, 0.15, 1.8])
    corners = np.array(
        [[(lo, hi)[a][0], (lo, hi)[b][1], (lo, hi)[c][2]] for a in (0, 1) for b in (0, 1) for c in (0, 1)]
    )
    for aspect in (16 / 9, 4 / 3):
        cam = OrbitCamera(yaw=yaw, pitch=pitch)
        Viewer.frame_box(SimpleNamespace(camera=cam, keep_above_ground=lambda: None), lo, hi, aspect)
        P = cam.projection(aspect) @ cam.view()
        h = np.c_[corners, np.ones(8)] @ P.T
        ndc = h[:, :3] / h[:, 3:]
        assert np.all(h[:, 3] > 0) and np.all(np.abs(ndc[:, :2]) < 1.0), (aspect, ndc)


def test_drop_a_box_on_the_robot_and_see_the_contact_between_them():
    """The viewer's 'drop a box' (key B): a new session with a free box above the highest body,
    the state and settings carried over; the box lands on the robot (not through it) and the
    contact forces list the box-robot contact with the body the reaction acts on."""
    m = chain(3)
    s = Session(m, scene=pbsim.make_scene(m, ground="plane"), integrator="euler", dt=2e-3, kp=200.0, kd=5.0)
    for _ in range(10):
        assert s.step_once(), s.message
    new = s.with_object("box", (0.05, 0.05, 0.05), 0.2)
    assert new.model.nb == m.nb + 1 and new.integrator_name == "euler" and new.time == s.time
    np.testing.assert_array_equal(new.q[: m.nq], s.q)
    top = pbsim.forward_kinematics(m, s.q)[:, 2, 3].max()
    for _ in range(400):
        assert new.step_once(), new.message
    assert new.q[-5] > top  # on the chain, not through it
    pairs = [c for c in new.contact_forces() if c["other"] >= 0]
    assert pairs and all(c["force"] @ c["normal"] > 0 for c in pairs)
