"""The viewer window's keyboard and mouse: shortcuts, camera orbit / pan / zoom, picking and the ctrl-drag spring."""

from __future__ import annotations

import numpy as np

import pbsim
from pbsim_viewer.panel import PANEL_WIDTH


class ViewerInput:
    """The event handlers of :class:`~pbsim_viewer.window.Viewer` (a mixin): they set the push and option flags."""

    def _gui_wants_mouse(self):
        return self.imgui.get_io().want_capture_mouse

    def on_key_press(self, symbol, modifiers):
        from pyglet.window import key

        if self.imgui.get_io().want_text_input:
            return None
        s = self.session
        if symbol == key.SPACE:
            s.toggle()
        elif symbol == key.RIGHT:
            s.step_requests += 1  # run by update (after a frame with the compile notice, if any)
        elif symbol == key.LEFT:
            s.step_back()
        elif symbol == key.R:
            s.reset()
        elif symbol == key.K:
            self.opt.request = "save_keyframe"
        elif symbol == key.L:
            self.opt.request = "load_keyframe"
        elif symbol == key.P:
            self.opt.request = "screenshot"
        elif symbol == key.F5:
            self.opt.request = "reload"
        elif symbol == key.B:
            self.opt.request = "drop_box"
        elif symbol == key.ESCAPE:
            self.opt.quit = True
            self.window.close()
            return True
        return None

    def _viewport(self):
        """(x0, width, height) of the 3-D viewport in framebuffer pixels, and the window-to-framebuffer scale."""
        fw, fh = self.window.get_framebuffer_size()
        sx = fw / max(self.window.width, 1)
        x0 = int(PANEL_WIDTH * sx) if self.opt.show_panel else 0
        return x0, max(fw - x0, 1), fh, sx

    def ray(self, x, y):
        """(origin, unit direction) in display coordinates of the pixel (x, y) (window coordinates,
        y up as pyglet gives them)."""
        x0, vw, fh, sx = self._viewport()
        u = (x * sx - x0) / vw * 2 - 1
        v = (y * sx) / fh * 2 - 1
        VP = self.camera.projection(vw / max(fh, 1)) @ self.camera.view()
        inv = np.linalg.inv(VP)
        a = inv @ np.array([u, v, -1.0, 1.0])
        b = inv @ np.array([u, v, 1.0, 1.0])
        a, b = a[:3] / a[3], b[:3] / b[3]
        d = b - a
        return a, d / np.linalg.norm(d)

    def pick(self, x, y):
        """(body, hit point in display coordinates) under the pixel, or None."""
        o, d = self.ray(x, y)
        return self.scene_renderer.pick(self.body_poses(self.session.q), o, d)

    def on_mouse_press(self, x, y, buttons, modifiers):
        from pyglet.window import key, mouse

        if self._gui_wants_mouse() or not buttons & mouse.LEFT:
            return
        if modifiers & key.MOD_CTRL:
            hit = self.pick(x, y)
            if hit is not None:
                self.start_drag(*hit)
            return
        self.press = (x, y)

    def start_drag(self, body, point):
        """Ctrl-press on ``body`` at display point ``point``: a spring from that point of the body
        to the mouse (the force goes through the session's :attr:`~Session.perturb`)."""
        T = self.body_poses(self.session.q)[body]
        local = T[:3, :3].T @ (point - T[:3, 3])
        depth = float(np.dot(point - self.camera.eye, self._forward()))
        self.drag = (int(body), local, depth)
        self.drag_target = np.array(point, float)
        self.opt.selected = int(body)

    def _forward(self):
        f = self.camera.target - self.camera.eye
        return f / np.linalg.norm(f)

    def on_mouse_release(self, x, y, buttons, modifiers):
        if self.drag is not None:
            self.drag = self.drag_target = None
            self.session.perturb = None
            return
        if self.press is not None and abs(x - self.press[0]) + abs(y - self.press[1]) <= 3:
            hit = self.pick(x, y)
            self.opt.selected = None if hit is None else int(hit[0])
        self.press = None

    def drag_to(self, x, y):
        """Move the spring's end to the pixel (x, y), at the depth the drag started."""
        o, d = self.ray(x, y)
        depth = self.drag[2]
        t = depth / max(float(np.dot(d, self._forward())), 1e-6)
        self.drag_target = o + t * d

    def update_drag_force(self):
        """Spring-damper from the dragged point to the mouse: stiffness 30 M (N/m per kg of
        robot, so 1 m of pull lifts about 3 weights), critically damped on the robot's mass."""
        s = self.session
        if self.drag is None:
            s.perturb = None
            return
        body, local, _ = self.drag
        M = max(float(s.model.total_mass), 1e-3)
        k, c = 30.0 * M, 2.0 * np.sqrt(30.0 * M * M) * 0.3
        T = self.body_poses(s.q)[body]
        p = T[:3, :3] @ local + T[:3, 3]
        # the point's velocity, in display coordinates
        J = pbsim.point_jacobian(s.model, s.q, body, local)[3:]
        vel = self.R.T @ (J @ s.state.v[0])
        f_display = k * (self.drag_target - p) - c * vel
        s.perturb = (body, local, self.R @ f_display)

    def on_mouse_drag(self, x, y, dx, dy, buttons, modifiers):
        from pyglet.window import key, mouse

        if self.drag is not None:
            self.drag_to(x, y)
            return
        if self._gui_wants_mouse():
            return
        self.press = None
        if buttons & mouse.LEFT and not modifiers & key.MOD_SHIFT:
            self.camera.orbit(dx, dy)
        else:
            self.camera.pan(dx, dy, self.window.height)

    def on_mouse_scroll(self, x, y, sx, sy):
        if not self._gui_wants_mouse():
            self.camera.zoom(sy)

    def on_draw(self):
        pass  # drawing happens in frame(); pyglet's on_draw only flips
