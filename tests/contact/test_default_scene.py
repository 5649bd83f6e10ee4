"""The model's own world geometry is the default scene everywhere (issue #16 item 4): one rule,
pbsim.contact.default_scene, for rollout(scene=None), the CLI and the viewer."""

from __future__ import annotations

import os

import numpy as np
import pytest

import pbsim
import pbsim_models
from pbsim.contact import Plane, default_scene


def _gym(name):
    gym = pytest.importorskip("gymnasium")
    p = os.path.join(os.path.dirname(gym.__file__), "envs", "mujoco", "assets", name)
    if not os.path.isfile(p):
        pytest.skip(f"gymnasium has no {name}")
    return p


def test_a_model_without_world_geometry_has_no_contact():
    m = pbsim_models.chain(3)
    sc = default_scene(m)
    assert sc.kernel_arrays(m).npts == 0 and not sc.all_environment()
    assert default_scene(m, ground="plane").kernel_arrays(m).npts > 0


def test_the_files_floor_is_the_default():
    m = pbsim.load(_gym("ant.xml"))
    env = default_scene(m).all_environment()
    assert len(env) == 1 and isinstance(env[0], Plane)
    assert default_scene(m) is default_scene(m)  # built once per model
    assert len(default_scene(m, ground="auto").all_environment()) == 1  # no second plane


@pytest.mark.parametrize("name, z_min", [("ant.xml", 0.25), ("humanoid.xml", 0.05)])
def test_gymnasium_robots_rest_on_their_own_floor_with_rollout_defaults(name, z_min):
    """Dropped with nothing but rollout's defaults (rk4, the file's floor): they land and rest
    (MuJoCo, same drop: ant 0.38 m, humanoid 0.08 m; without the floor both fall through)."""
    m = pbsim.load(_gym(name))
    tr = pbsim.rollout(m, dt=1e-3, steps=2000)
    z = tr.q[:, 2]
    assert np.isfinite(tr.q).all() and z[-1] > z_min and abs(z[-1] - z[-200]) < 0.01, z[::200]
    free = pbsim.rollout(m, dt=1e-3, steps=800, scene=pbsim.Scene())
    assert free.q[-1, 2] < 0.0  # the floor is what holds it


def test_cli_and_viewer_use_the_same_rule():
    from pbsim.cli import build_parser

    args = build_parser().parse_args(["rollout", _gym("ant.xml")])
    assert args.ground == "model"
    pytest.importorskip("pbsim_viewer")
    from pbsim_viewer.app import make_session

    s = make_session(_gym("ant.xml"))
    env = s.scene.all_environment()
    assert len(env) == 1 and isinstance(env[0], Plane)  # the file's floor, no extra plane
    s2 = make_session(pbsim_models.chain(2))
    assert s2.scene.kernel_arrays(s2.model).npts == 0 or len(s2.scene.all_environment()) == 1
