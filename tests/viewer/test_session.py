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
        s.set_dt(s.dt * 1.5)  # dt change mid-run
    assert s.steps == 50 * len(pbsim.integrators.available())
    assert np.all(np.isfinite(s.q))
    assert len(s.hist_energy) == s.steps and np.all(np.isfinite(s.histories()["energy"]))
    # SPD pulls the joints towards the targets: tracking error fell from 0.3 rad
    assert s.histories()["tracking_error"][-1] < 0.3


def test_every_integrator_on_humanoid_fixed_base():
    from tests.conftest import pybullet_file

    s = Session(pbsim.load(pybullet_file("humanoid/humanoid.urdf"), floating_base=False), dt=1e-3)
    for name in pbsim.integrators.available():
        s.set_integrator(name)
        for _ in range(50):
            assert s.step_once(), s.message


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
            return new, Diagnostics(diag.energy, np.array([False]), iterations=np.array([50]),
                                    residual=np.array([0.3]), converged=np.array([False]))
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
    code = ("import sys\n"
            "class Block:\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name.split('.')[0] in ('pyglet', 'OpenGL', 'imgui_bundle'):\n"
            "            raise ImportError('blocked ' + name)\n"
            "sys.meta_path.insert(0, Block())\n"
            "import pbsim, pbsim_viewer\n"
            "print('ok', pbsim_viewer.Session.__name__)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                       env={"PYTHONPATH": f"{ROOT}:{ROOT / 'viewer'}:{ROOT / 'models'}", "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0 and "ok Session" in r.stdout, r.stderr


def test_place_on_terrain_without_gl():
    from tests.conftest import robosimian_urdf, terrain_file

    from pbsim_viewer.app import place_on_terrain, terrain_top, terrain_triangles
    from pbsim_viewer.shapes import primitive_mesh

    tris = terrain_triangles(terrain_file("drc_rough_terrain.stl"))
    s = Session(pbsim.load(robosimian_urdf(), floating_base=True))
    place_on_terrain(s, tris, clearance=0.02)
    T = pbsim.forward_kinematics(s.model, s.q)
    pts = np.concatenate([t.reshape(-1, 3) @ T[g.body, :3, :3].T + T[g.body, :3, 3]
                          for g in s.model.geoms if len(t := primitive_mesh(g))])
    # the lowest robot point sits 2 cm above the terrain under the robot's footprint
    top = terrain_top(tris, pts[:, 0].min(), pts[:, 0].max(), pts[:, 1].min(), pts[:, 1].max())
    assert pts[:, 2].min() - top == pytest.approx(0.02, abs=1e-9)
    # and that bound really is above every terrain point there: sample the triangles' interiors
    rng = np.random.default_rng(1)
    w = rng.dirichlet(np.ones(3), size=(len(tris), 8))
    samp = np.einsum("fsk,fkd->fsd", w, tris).reshape(-1, 3)
    inside = ((samp[:, 0] > pts[:, 0].min()) & (samp[:, 0] < pts[:, 0].max())
              & (samp[:, 1] > pts[:, 1].min()) & (samp[:, 1] < pts[:, 1].max()))
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
