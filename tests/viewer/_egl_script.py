"""Run in a subprocess by test_headless.py: headless EGL window, synthetic pyglet events, pixels.

Prints one JSON line ``RESULT {...}`` (or ``SKIP reason``)."""

from __future__ import annotations

import json
import os
import sys

os.environ["PYOPENGL_PLATFORM"] = "egl"
import pyglet  # noqa: E402

pyglet.options["headless"] = True
pyglet.options["shadow_window"] = False

import numpy as np  # noqa: E402

import pbsim  # noqa: E402
from pbsim_viewer.app import Viewer  # noqa: E402
from pbsim_viewer.panel import ITEM_RECTS, PANEL_WIDTH  # noqa: E402
from pbsim_viewer.session import Session  # noqa: E402


def main(path, floating, do_input, shot, ground=False):
    from pyglet.window import key, mouse

    try:
        model = pbsim.load(path, floating_base=floating)
        s = Session(model, scene=pbsim.make_scene(model) if ground else None, dt=2e-3, integrator="euler")
        v = Viewer(s, 1024, 640, visible=False)
    except Exception as e:  # noqa: BLE001
        print("SKIP", f"no headless GL window: {type(e).__name__}: {e}")
        return
    _W, H = 1024, 640
    res = {}
    v.opt.follow = False
    v.pump(3)
    img = v.read_pixels()
    v.opt.show_visual = v.opt.show_collision = False
    v.pump(1)
    empty = v.read_pixels()
    v.opt.show_visual = True
    v.pump(1)
    scene = np.abs(img[:, PANEL_WIDTH:].astype(int) - empty[:, PANEL_WIDTH:].astype(int)).sum(2) > 30
    res["robot_pixels"] = int(scene.sum())
    bg = np.array([0.12, 0.13, 0.16]) * 255
    panel = img[:, :PANEL_WIDTH].astype(float)
    res["panel_pixels"] = int((np.abs(panel - bg).sum(2) > 30).sum())
    res["panel_text_pixels"] = int((panel.max(2) > 200).sum())  # bright glyphs
    # every overlay on: exercises each draw path (a GL error raises here)
    v.opt.show_collision = v.opt.show_frames = v.opt.show_com = v.opt.show_contacts = v.opt.show_normals = True
    v.pump(2)
    c = v._contacts(s.q)
    res["contacts_active"] = int(c[1].sum()) if c is not None else -1
    over = v.read_pixels()
    res["overlay_changed_pixels"] = int((np.abs(over.astype(int) - img.astype(int)).sum(2) > 30)[:, PANEL_WIDTH:].sum())
    v.opt.show_collision = v.opt.show_frames = v.opt.show_com = False
    if shot:
        v.save_screenshot(shot)
    if do_input:
        ev = v.window.dispatch_event

        def center(k):
            x0, y0, x1, y1 = ITEM_RECTS[k]
            return (x0 + x1) / 2, (y0 + y1) / 2

        def move(x, y):
            ev("on_mouse_motion", int(x), int(H - y), 0, 0)
            v.pump(2)

        def click(x, y):
            move(x, y)
            ev("on_mouse_press", int(x), int(H - y), mouse.LEFT, 0)
            v.pump(1)
            ev("on_mouse_release", int(x), int(H - y), mouse.LEFT, 0)
            v.pump(2)

        def press(sym, mods=0):
            ev("on_key_press", sym, mods)
            v.pump(1)
            ev("on_key_release", sym, mods)
            v.pump(1)

        def select_all_and_type(text):
            ev("on_key_press", key.LCTRL, key.MOD_CTRL)
            press(key.A, key.MOD_CTRL)
            ev("on_key_release", key.LCTRL, 0)
            ev("on_text", text)
            v.pump(1)
            press(key.ENTER)

        names = pbsim.integrators.available()
        target = names[-1]
        click(*center("integrator"))
        click(*center(f"integrator_item_{names.index(target)}"))
        res["integrator"] = s.integrator_name
        res["integrator_target"] = target
        click(*center("dt_typed"))
        select_all_and_type("0.004")
        res["dt"] = s.dt
        ev("on_key_press", key.LCTRL, key.MOD_CTRL)
        click(*center("kp"))
        ev("on_key_release", key.LCTRL, 0)
        v.pump(1)
        select_all_and_type("777")
        res["kp"] = s.kp_global
        res["kp_dofs"] = float(s.kp[s.actuated].min()) if s.actuated.any() else 777.0
        move(PANEL_WIDTH + 300, 300)  # leave the panel so keys go to the scene
        playing0 = s.playing
        press(key.SPACE)
        res["space_toggles"] = s.playing != playing0
        press(key.SPACE)
        t0 = s.steps
        press(key.RIGHT)
        res["right_steps"] = s.steps - t0
        press(key.R)
        res["reset"] = s.steps == 0
    v.close()
    print("RESULT", json.dumps(res))


if __name__ == "__main__":
    main(
        sys.argv[1],
        sys.argv[2] == "float",
        sys.argv[3] == "input",
        sys.argv[4] if len(sys.argv) > 4 and sys.argv[4] != "-" else None,
        "ground" in sys.argv[5:],
    )
