"""Run in a subprocess by test_headless.py (issue #20): a DAE-mesh robot drawn, click picking,
ctrl-drag through Session.perturb, contact force arrows, no floor without ground, no panel.

argv: OUT_DIR [DOCS_DIR].  Prints ``RESULT {...}`` or ``SKIP reason``."""

from __future__ import annotations

import json
import os
import sys

os.environ["PYOPENGL_PLATFORM"] = "egl"
import pyglet  # noqa: E402

pyglet.options["headless"] = True
pyglet.options["shadow_window"] = False

import numpy as np  # noqa: E402

from pbsim_viewer.app import Viewer, make_session  # noqa: E402
from pbsim_viewer.panel import PANEL_WIDTH  # noqa: E402

W, H = 800, 480
BG = np.array([0.12, 0.13, 0.16]) * 255


def write_dae_robot(folder):
    """A 2-link arm whose visual shapes are COLLADA meshes (written by trimesh + pycollada)."""
    import trimesh

    trimesh.creation.box(extents=(0.3, 0.3, 0.2)).export(os.path.join(folder, "base.dae"))
    trimesh.creation.cylinder(radius=0.06, height=0.8).export(os.path.join(folder, "arm.dae"))
    urdf = """<robot name="dae_arm">
 <material name="orange"><color rgba="0.95 0.5 0.1 1"/></material>
 <link name="base"><inertial><mass value="2"/><inertia ixx="0.02" iyy="0.02" izz="0.02" ixy="0" ixz="0" iyz="0"/>
  </inertial><visual><geometry><mesh filename="base.dae"/></geometry><material name="orange"/></visual></link>
 <link name="arm"><inertial><origin xyz="0 0 0.4"/><mass value="1"/>
  <inertia ixx="0.05" iyy="0.05" izz="0.002" ixy="0" ixz="0" iyz="0"/></inertial>
  <visual><origin xyz="0 0 0.4"/><geometry><mesh filename="arm.dae"/></geometry><material name="orange"/></visual>
 </link>
 <joint name="shoulder" type="revolute"><parent link="base"/><child link="arm"/><origin xyz="0 0 0.1"/>
  <axis xyz="0 1 0"/><limit lower="-2" upper="2" effort="50" velocity="5"/></joint>
</robot>"""
    path = os.path.join(folder, "dae_arm.urdf")
    with open(path, "w") as f:
        f.write(urdf)
    return path


def scene_mask(a, b, x0=PANEL_WIDTH):
    return np.abs(a[:, x0:].astype(int) - b[:, x0:].astype(int)).sum(2) > 30


def to_window(v, p):
    """Window pixel (x, y up) of display point p."""
    x0, vw, fh, sx = v._viewport()
    VP = v.camera.projection(vw / max(fh, 1)) @ v.camera.view()
    c = VP @ np.append(p, 1.0)
    ndc = c[:3] / c[3]
    return (x0 + (ndc[0] + 1) / 2 * vw) / sx, (ndc[1] + 1) / 2 * fh / sx


def main(out, docs=None):
    from pyglet.window import key, mouse

    res = {}
    if os.environ.get("PART") == "quad":
        quadruped(res, docs)
        print("RESULT", json.dumps(res))
        return
    path = write_dae_robot(out)
    try:
        s = make_session(path, floating=False, integrator="euler", dt=2e-3, ground="none", kp=0.0, kd=0.0)
        v = Viewer(s, W, H, visible=False)
    except Exception as e:  # noqa: BLE001
        print("SKIP", f"no headless GL window: {type(e).__name__}: {e}")
        return
    v.opt.follow = False
    # 1. the DAE meshes are drawn (no note, pixels in the robot's orange)
    res["dae_notes"] = list(v.scene_renderer.draw_notes)
    res["dae_shapes"] = len(v.scene_renderer.pick_tris)
    v.pump(2)
    img = v.read_pixels()[:, PANEL_WIDTH:].astype(int)
    res["dae_orange_pixels"] = int(((img[:, :, 0] > 1.5 * img[:, :, 2]) & (img[:, :, 0] > 80)).sum())
    # 2. --ground none: no opaque floor; below the robot the background shows
    res["draw_floor"] = bool(v.scene_renderer.draw_floor)
    bottom = v.read_pixels()[-20:, PANEL_WIDTH:].astype(float)
    res["bottom_background_fraction"] = float((np.abs(bottom - BG).sum(2) < 30).mean())
    if docs:
        v.save_screenshot(os.path.join(docs, "viewer_dae.png"))
    # 3. a click on the arm selects it; its info is in the panel
    T = v.body_poses(s.q)
    arm = s.model.body_index("arm")
    tip = T[arm, :3, :3] @ np.array([0.0, 0.0, 0.6]) + T[arm, :3, 3]
    x, y = to_window(v, tip)
    ev = v.window.dispatch_event
    ev("on_mouse_motion", int(x), int(y), 0, 0)
    v.pump(1)
    ev("on_mouse_press", int(x), int(y), mouse.LEFT, 0)
    ev("on_mouse_release", int(x), int(y), mouse.LEFT, 0)
    v.pump(1)
    res["selected"] = v.opt.selected
    res["selected_name"] = s.model.body_names[v.opt.selected] if v.opt.selected is not None else None
    # 4. ctrl-drag pulls the arm sideways through Session.perturb (J^T f into Control.tau)
    s.play()
    q_before = float(s.q[0])
    ev("on_mouse_press", int(x), int(y), mouse.LEFT, key.MOD_CTRL)
    v.pump(1)
    res["drag_started"] = v.drag is not None
    for k in range(1, 13):
        ev("on_mouse_drag", int(x + 12 * k), int(y), 12, 0, mouse.LEFT, key.MOD_CTRL)
        v.pump(2)
    res["perturb_force"] = None if s.perturb is None else float(np.linalg.norm(s.perturb[2]))
    res["drag_tau"] = None if s.perturb is None else float(np.abs(s.control().tau).max())
    res["q_moved"] = float(s.q[0]) - q_before
    shot = v.read_pixels()
    v.opt.show_forces = False
    v.pump(1)
    res["arrow_pixels"] = int(scene_mask(shot, v.read_pixels()).sum())
    v.opt.show_forces = True
    v.pump(1)
    if docs:
        v.save_screenshot(os.path.join(docs, "viewer_drag.png"))
    ev("on_mouse_release", int(x + 144), int(y), mouse.LEFT, key.MOD_CTRL)
    v.pump(1)
    res["perturb_after_release"] = s.perturb is not None
    # 5. no panel: the 3-D view takes the whole window
    v.opt.show_panel = False
    v.pump(1)
    left = v.read_pixels()[:, :PANEL_WIDTH].astype(float)
    res["no_panel_left_dark_fraction"] = float((left.max(2) < 25).mean())  # the panel is near-black
    v.close()
    print("RESULT", json.dumps(res))


def quadruped(res, docs):
    """Contact force arrows on a quadruped standing on the plane."""
    import pybullet_data

    a1 = os.path.join(pybullet_data.getDataPath(), "a1/a1.urdf")
    s2 = make_session(a1, integrator="euler", dt=1e-3)
    for _ in range(150):
        s2.step_once()
    try:
        v2 = Viewer(s2, W, H, visible=False)
    except Exception as e:  # noqa: BLE001
        print("SKIP", f"no headless GL window: {type(e).__name__}: {e}")
        return
    v2.opt.follow = False
    v2.camera.yaw, v2.camera.pitch = -100.0, 8.0
    v2.pump(1)
    on = v2.read_pixels()
    res["contact_forces"] = len(s2.contact_forces())
    v2.opt.show_forces = False
    v2.pump(1)
    res["contact_arrow_pixels"] = int(scene_mask(on, v2.read_pixels()).sum())
    v2.opt.show_forces = True
    if docs:
        v2.opt.show_contacts = True
        v2.pump(1)
        v2.save_screenshot(os.path.join(docs, "viewer_contact_forces.png"))
        v2.opt.selected = int(s2.contact_forces()[0]["body"]) if s2.contact_forces() else None
        v2.pump(1)
        v2.save_screenshot(os.path.join(docs, "viewer_panel.png"))
    v2.close()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None)
