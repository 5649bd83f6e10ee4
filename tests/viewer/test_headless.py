"""Real window in headless EGL (Mesa), in a subprocess so GL options are set before any GL import:
frames of the DeepMimic humanoid and Robosimian, pixel checks, synthetic pyglet input."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import pybullet_file, robosimian_urdf

pytest.importorskip("pyglet")
pytest.importorskip("imgui_bundle")
pytest.importorskip("OpenGL")

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = Path(__file__).with_name("_egl_script.py")


def run_script(*args):
    env = dict(os.environ)
    env.pop("DISPLAY", None)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT), str(ROOT / "viewer"), str(ROOT / "models"), env.get("PYTHONPATH", "")]
    )
    r = subprocess.run(
        [sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True, env=env, timeout=600, cwd=ROOT
    )
    for line in r.stdout.splitlines():
        if line.startswith("SKIP"):
            pytest.skip(line)
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise AssertionError(f"viewer subprocess failed (rc {r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")


def check_drawn(res):
    # the robot covers a visible part of the 3-D viewport (624x640 px) ...
    assert res["robot_pixels"] > 2000, res
    # ... and the panel (400x640 px) is drawn, with text
    assert res["panel_pixels"] > 50_000, res
    assert res["panel_text_pixels"] > 1000, res
    # collision shapes, joint frames and the COM marker change the picture
    assert res["overlay_changed_pixels"] > 200, res


def test_humanoid_frames_render():
    # with a z-up ground plane through the fixed y-up humanoid: contact points and normals drawn
    res = run_script(pybullet_file("humanoid/humanoid.urdf"), "fixed", "noinput", "-", "ground")
    check_drawn(res)
    assert res["contacts_active"] > 0, res


def test_robosimian_frames_and_synthetic_input(tmp_path):
    res = run_script(robosimian_urdf(), "fixed", "input", tmp_path / "shot.png")
    check_drawn(res)
    assert res["contacts_active"] == -1  # no scene: nothing to draw
    assert (tmp_path / "shot.png").stat().st_size > 10_000
    assert res["integrator"] == res["integrator_target"]
    assert res["dt"] == pytest.approx(0.004)
    assert res["kp"] == pytest.approx(777.0) and res["kp_dofs"] == pytest.approx(777.0)
    assert res["space_toggles"] and res["right_steps"] == 1 and res["reset"]


def run_issue20(tmp_path, part=""):
    env = dict(os.environ)
    env.pop("DISPLAY", None)
    env["PART"] = part
    env["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT), str(ROOT / "viewer"), str(ROOT / "models"), env.get("PYTHONPATH", "")]
    )
    script = Path(__file__).with_name("_egl_issue20.py")
    r = subprocess.run(
        [sys.executable, str(script), str(tmp_path)], capture_output=True, text=True, env=env, timeout=900, cwd=ROOT
    )
    for line in r.stdout.splitlines():
        if line.startswith("SKIP"):
            pytest.skip(line)
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise AssertionError(f"viewer subprocess failed (rc {r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")


def test_dae_robot_picking_drag_no_floor_no_panel(tmp_path):
    """Issue #20: a robot whose visual meshes are COLLADA files written in the test is drawn (no
    note, ~30k robot-coloured pixels measured); --ground none draws no floor (the bottom rows show
    the background); a click on the arm selects it; ctrl-drag pulls it through Session.perturb
    (J^T f in Control.tau: the arm swung 0.33 rad in 24 frames, measured) with an arrow drawn;
    releasing ends the push; without the panel the 3-D view fills the window."""
    pytest.importorskip("collada")
    res = run_issue20(tmp_path)
    assert res["dae_notes"] == [] and res["dae_orange_pixels"] > 5000, res
    assert res["draw_floor"] is False and res["bottom_background_fraction"] > 0.5, res
    assert res["selected_name"] == "arm", res
    assert res["drag_started"] and res["perturb_force"] > 0.1 and res["drag_tau"] > 0.01, res
    assert abs(res["q_moved"]) > 0.02 and res["arrow_pixels"] > 100, res
    assert not res["perturb_after_release"], res
    assert res["no_panel_left_dark_fraction"] < 0.05, res


def test_contact_force_arrows_on_a_quadruped(tmp_path):
    res = run_issue20(tmp_path, "quad")
    assert res["contact_forces"] >= 2 and res["contact_arrow_pixels"] > 100, res


def test_record_gif_and_mp4_from_cli(tmp_path):
    """`pbsim view MODEL --record out.{gif,mp4} --frames N`: N frames of the rendered picture."""
    from PIL import Image

    env = dict(os.environ)
    env.pop("DISPLAY", None)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT), str(ROOT / "viewer"), str(ROOT / "models"), env.get("PYTHONPATH", "")]
    )
    model = pybullet_file("pendulum5.urdf")
    outs = [tmp_path / "clip.gif"]
    try:
        import imageio_ffmpeg

        outs.append(tmp_path / "clip.mp4")
    except ImportError:
        imageio_ffmpeg = None
    for out in outs:
        r = subprocess.run(
            [
                sys.executable,
                "-m",
                "pbsim.cli",
                "view",
                model,
                "--record",
                str(out),
                "--frames",
                "7",
                "--size",
                "320x240",
                "--headless",
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=600,
            cwd=ROOT,
        )
        if r.returncode != 0 and ("EGL" in r.stderr or "headless" in r.stderr.lower()) and not out.exists():
            pytest.skip(f"no headless GL: {r.stderr[-300:]}")
        assert r.returncode == 0, r.stderr[-2000:]
        if out.suffix == ".gif":
            im = Image.open(out)
            assert im.n_frames == 7 and im.size == (320, 240)
            assert im.info["duration"] == 20  # 2 cs, the frame time the viewer advanced (1/50 s)
            im.seek(6)
            assert np.asarray(im.convert("RGB")).std() > 5  # a picture, not a blank frame
        else:
            nframes, secs = imageio_ffmpeg.count_frames_and_secs(str(out))
            assert nframes == 7 and secs == pytest.approx(7 / 60, abs=0.02)


def test_record_refuses_unknown_format(tmp_path):
    from pbsim.errors import InputError
    from pbsim_viewer.record import FrameRecorder

    with pytest.raises(InputError, match="avi"):
        FrameRecorder(tmp_path / "x.avi")
    rec = FrameRecorder(tmp_path / "x.gif")
    rec.add(np.zeros((4, 6, 3), np.uint8))
    with pytest.raises(InputError, match="frame size changed"):
        rec.add(np.zeros((4, 8, 3), np.uint8))
