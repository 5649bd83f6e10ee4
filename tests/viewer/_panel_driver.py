"""Drive the panel with no GL: imgui IO events + a stand-in renderer."""

from __future__ import annotations

from imgui_bundle import imgui, implot

from pbsim_viewer.panel import ITEM_RECTS, StandInRenderer, ViewOptions, draw_panel


class PanelDriver:
    def __init__(self, session, size=(1280, 720)):
        self.ctx = imgui.create_context()
        self.pctx = implot.create_context()
        self.io = imgui.get_io()
        self.io.display_size = imgui.ImVec2(*size)
        self.io.set_ini_filename("")
        self.renderer = StandInRenderer()
        self.s = session
        self.opt = ViewOptions()
        self.frame()

    def close(self):
        implot.destroy_context(self.pctx)
        imgui.destroy_context(self.ctx)

    def frame(self, n=1):
        for _ in range(n):
            self.io.delta_time = 1.0 / 60.0
            imgui.new_frame()
            draw_panel(self.s, self.opt)
            imgui.render()
            self.renderer.render(imgui.get_draw_data())

    def center(self, key):
        x0, y0, x1, y1 = ITEM_RECTS[key]
        return (x0 + x1) / 2, (y0 + y1) / 2

    def move(self, x, y):
        self.io.add_mouse_pos_event(x, y)
        self.frame(2)

    def click(self, key=None, at=None, ctrl=False):
        x, y = at if at is not None else self.center(key)
        self.move(x, y)
        if ctrl:
            self.io.add_key_event(imgui.Key.left_ctrl, True)
            self.io.add_key_event(imgui.Key.mod_ctrl, True)
        self.io.add_mouse_button_event(0, True)
        self.frame()
        self.io.add_mouse_button_event(0, False)
        if ctrl:
            self.io.add_key_event(imgui.Key.left_ctrl, False)
            self.io.add_key_event(imgui.Key.mod_ctrl, False)
        self.frame(2)

    def drag(self, key, frac_from, frac_to):
        x0, y0, x1, y1 = ITEM_RECTS[key]
        y = (y0 + y1) / 2
        self.move(x0 + frac_from * (x1 - x0), y)
        self.io.add_mouse_button_event(0, True)
        self.frame()
        for k in range(1, 6):
            f = frac_from + (frac_to - frac_from) * k / 5
            self.io.add_mouse_pos_event(x0 + f * (x1 - x0), y)
            self.frame()
        self.io.add_mouse_button_event(0, False)
        self.frame(2)

    def key(self, k):
        self.io.add_key_event(k, True)
        self.frame()
        self.io.add_key_event(k, False)
        self.frame()

    def type(self, text, enter=True):
        for ch in text:
            self.io.add_input_character(ord(ch))
        self.frame()
        if enter:
            self.key(imgui.Key.enter)
