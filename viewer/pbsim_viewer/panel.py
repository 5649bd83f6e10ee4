"""The ImGui control panel.  Uses imgui-bundle (imgui + implot) but no GL: tests drive it with a
stand-in renderer (:class:`StandInRenderer`) by feeding events into imgui's IO."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from imgui_bundle import imgui, implot

from pbsim_viewer.session import DT_MAX, DT_MIN, Session

PANEL_WIDTH = 400
KP_MAX, KD_MAX = 1e5, 1e3
# Screen rectangles (x0, y0, x1, y1; imgui coordinates, y down) of the last frame's main widgets,
# by stable widget ID: tests and scripted captures click on them.
ITEM_RECTS: dict[str, tuple[float, float, float, float]] = {}


def _rect(key: str) -> None:
    a, b = imgui.get_item_rect_min(), imgui.get_item_rect_max()
    ITEM_RECTS[key] = (a.x, a.y, b.x, b.y)


@dataclass
class ViewOptions:
    """Display toggles shared by the panel and the 3-D renderer."""

    show_visual: bool = True
    show_collision: bool = False
    show_contacts: bool = True
    show_normals: bool = False
    show_frames: bool = False
    show_com: bool = False
    show_grid: bool = True
    follow: bool = True
    show_plots: bool = True
    show_forces: bool = True  # contact force arrows (the scene's penalty law) and the drag arrow
    show_panel: bool = True  # False: the 3-D view fills the window (recordings, --no-panel)
    quit: bool = False
    # requests the window acts on (the panel has no GL): screenshot, reload, keyframe save/load
    request: str | None = None
    keyframe_path: str = "keyframe.npz"
    selected: int | None = None  # body picked with a click (its info is shown)
    draw_notes: tuple = ()  # shapes the renderer could not draw
    status: str = ""  # last file written / read (screenshot, keyframe)


SPEEDS = (1 / 16, 1 / 8, 1 / 4, 1 / 2, 1.0, 2.0, 4.0)


def plot_limits(y) -> tuple[float, float]:
    """y-axis range of a plot: the data's, padded 5 %; a nearly constant series gets a span of
    1e-6 of its size (at least 1e-9) so the tick labels do not pile up."""
    y = np.asarray(y, float)
    y = y[np.isfinite(y)]
    if not len(y):
        return 0.0, 1.0
    lo, hi = float(y.min()), float(y.max())
    span = max(hi - lo, 1e-6 * max(abs(lo), abs(hi)), 1e-9)
    mid = 0.5 * (lo + hi)
    return mid - 0.55 * span, mid + 0.55 * span


def draw_panel(s: Session, opt: ViewOptions, height: float | None = None) -> None:
    """One frame of the panel (between ``imgui.new_frame`` and ``imgui.render``)."""
    io = imgui.get_io()
    imgui.set_next_window_pos(imgui.ImVec2(0, 0), imgui.Cond_.always)
    imgui.set_next_window_size(imgui.ImVec2(PANEL_WIDTH, height or io.display_size.y), imgui.Cond_.always)
    imgui.begin(
        "pbsim###panel",
        None,
        imgui.WindowFlags_.no_move | imgui.WindowFlags_.no_resize | imgui.WindowFlags_.no_collapse,
    )
    imgui.text(f"{s.model.name}  nq {s.model.nq}  nv {s.model.nv}")
    imgui.text(f"t = {s.time:.3f} s   steps {s.steps}")
    if s.message:
        imgui.push_style_color(imgui.Col_.text, imgui.ImVec4(1.0, 0.35, 0.3, 1.0))
        imgui.text_wrapped(s.message)
        imgui.pop_style_color()
    if s.notice:
        imgui.push_style_color(imgui.Col_.text, imgui.ImVec4(1.0, 0.85, 0.3, 1.0))
        imgui.text_wrapped(s.notice)
        imgui.pop_style_color()
    for note in opt.draw_notes[:3]:
        imgui.push_style_color(imgui.Col_.text, imgui.ImVec4(0.8, 0.8, 0.5, 1.0))
        imgui.text_wrapped(note)
        imgui.pop_style_color()
    if opt.status:
        imgui.text_wrapped(opt.status)

    # --- run controls
    _hit = imgui.button(("Pause" if s.playing else "Play") + "###pause", imgui.ImVec2(80, 0))
    _rect('pause')
    if _hit:
        s.toggle()
    imgui.same_line()
    _hit = imgui.button("Step###step", imgui.ImVec2(80, 0))
    _rect('step')
    if _hit:
        s.pause()
        s.step_requests += 1  # run by update, after a frame with the compile notice (as the right-arrow key)
    imgui.same_line()
    _hit = imgui.button("Reset###reset", imgui.ImVec2(80, 0))
    _rect('reset')
    if _hit:
        s.reset()
    imgui.same_line()
    _hit = imgui.button("<###step_back", imgui.ImVec2(30, 0))
    _rect("step_back")
    if _hit:
        s.step_back()
    imgui.text(f"real-time factor {s.rtf:5.2f}  {s.fps:5.1f} fps  {s.ms_per_step:6.3f} ms/step")
    # speed: the simulation never runs faster than this many times real time
    k = int(np.argmin([abs(np.log(s.real_time_factor_target / v)) for v in SPEEDS]))
    changed, k = imgui.slider_int("speed###speed", k, 0, len(SPEEDS) - 1, f"x{SPEEDS[k]:g} (capped)")
    _rect("speed")
    if changed:
        s.real_time_factor_target = SPEEDS[k]
    # history: the ring buffer of recent states (scrub back like MuJoCo's history slider)
    n = len(s.ring)
    if n > 1:
        cur = n - 1 if s.scrub_index is None else s.scrub_index
        changed, cur = imgui.slider_int("history###history", cur, 0, n - 1, f"%d / {n - 1}")
        _rect("history")
        if changed:
            s.scrub(cur)

    # --- integrator and time step
    names = s.integrators
    cur = names.index(s.integrator_name) if s.integrator_name in names else 0
    # every registered integrator, without scrolling; each open item's rectangle is recorded
    imgui.set_next_window_size_constraints(imgui.ImVec2(0, 0), imgui.ImVec2(PANEL_WIDTH, 30.0 * len(names) + 20))
    c0 = imgui.get_cursor_screen_pos()
    ITEM_RECTS["integrator"] = (c0.x, c0.y, c0.x + imgui.calc_item_width(), c0.y + imgui.get_frame_height())
    opened = imgui.begin_combo("integrator###integrator", names[cur] if names else "", imgui.ComboFlags_.height_largest)
    if opened:
        problems = s.integrator_problems()
        for k, nm in enumerate(names):
            why = problems.get(nm)
            flags = imgui.SelectableFlags_.disabled if why else 0
            hit, _ = imgui.selectable(f"{nm}###integrator_{nm}", k == cur, flags)
            _rect(f"integrator_item_{k}")
            if why:
                imgui.set_item_tooltip(why[:300])  # greyed out: why it cannot run in this scene
            if hit and k != cur and not why:
                s.set_integrator(nm)
        imgui.end_combo()
    changed, dt = imgui.slider_float(
        "dt [s]###dt", s.dt, DT_MIN, DT_MAX, "%.5f", imgui.SliderFlags_.logarithmic | imgui.SliderFlags_.always_clamp
    )
    _rect('dt')
    if changed:
        s.set_dt(dt)
    changed, dt = imgui.input_double(
        "dt typed###dt_typed", s.dt, 0.0, 0.0, "%.6f", imgui.InputTextFlags_.enter_returns_true
    )
    _rect('dt_typed')
    if changed:
        s.set_dt(dt)

    # --- SPD gains
    imgui.separator_text("stable PD")
    changed, kp = imgui.slider_float("kp###kp", s.kp_global, 0.0, KP_MAX, "%.1f", imgui.SliderFlags_.logarithmic)
    _rect('kp')
    if changed:
        s.set_kp(kp)
    changed, kd = imgui.slider_float("kd###kd", s.kd_global, 0.0, KD_MAX, "%.2f", imgui.SliderFlags_.logarithmic)
    _rect('kd')
    if changed:
        s.set_kd(kd)
    act = np.flatnonzero(s.actuated)
    _hit = imgui.collapsing_header("per-joint gains###perjoint")
    _rect('perjoint')
    if _hit:
        if imgui.begin_table(
            "gains###gains_table",
            3,
            imgui.TableFlags_.borders | imgui.TableFlags_.row_bg | imgui.TableFlags_.scroll_y,
            imgui.ImVec2(0, 220),
        ):
            imgui.table_setup_column("joint")
            imgui.table_setup_column("kp")
            imgui.table_setup_column("kd")
            imgui.table_headers_row()
            for j in act:
                imgui.table_next_row()
                imgui.table_next_column()
                imgui.text(s.dof_names[j])
                imgui.table_next_column()
                imgui.set_next_item_width(-1)
                c, v = imgui.drag_float(f"###kp_{j}", float(s.kp[j]), 1.0, 0.0, KP_MAX, "%.1f")
                if c:
                    s.set_kp(v, int(j))
                imgui.table_next_column()
                imgui.set_next_item_width(-1)
                c, v = imgui.drag_float(f"###kd_{j}", float(s.kd[j]), 0.1, 0.0, KD_MAX, "%.2f")
                if c:
                    s.set_kd(v, int(j))
            imgui.end_table()
    _hit = imgui.collapsing_header("joint targets###targets")
    _rect('targets')
    if _hit:
        if imgui.button("zero targets###zero_targets"):
            s.zero_targets()
        imgui.begin_child("targets_child", imgui.ImVec2(0, 220))
        for j in act:
            lo, hi = s.target_range(int(j))
            c, v = imgui.slider_float(f"{s.dof_names[j]}###target_{j}", float(s.target[j]), lo, hi, "%.3f")
            if c:
                s.set_target(int(j), v)
        imgui.end_child()

    if s.model.nu:
        _hit = imgui.collapsing_header("actuators (ctrl)###actuators")
        _rect("actuators")
        if _hit:
            c, v = imgui.checkbox("drive the file's actuators (instead of SPD)###drive_act", s.drive_actuators)
            if c:
                s.drive_actuators = v
            imgui.begin_child("act_child", imgui.ImVec2(0, 180))
            for a, name in enumerate(s.model.actuator_names):
                lo, hi = s.ctrl_range(a)
                c, v = imgui.slider_float(f"{name}###ctrl_{a}", float(s.ctrl[a]), lo, hi, "%.3f")
                if c:
                    s.set_ctrl(a, v)
            imgui.end_child()

    # --- joint positions (paused): set q directly
    if not s.playing:
        _hit = imgui.collapsing_header("joint positions (paused)###qpos")
        _rect("qpos")
        if _hit:
            imgui.begin_child("qpos_child", imgui.ImVec2(0, 200))
            for iq, name, lo, hi in s.q_sliders():
                c, v = imgui.slider_float(f"{name}###q_{iq}", float(s.q[iq]), lo, hi, "%.3f")
                if c:
                    s.set_q(iq, v)
            imgui.end_child()

    # --- keyframes, reload, screenshot (the window does the file work)
    if imgui.collapsing_header("keyframes and files###files"):
        for name in s.model.keyframes:  # the file's own keys (MJCF <keyframe>)
            if imgui.button(f"key {name}###modelkey_{name}"):
                s.load_model_keyframe(name)
            imgui.same_line()
        if s.model.keyframes:
            imgui.new_line()
        _, opt.keyframe_path = imgui.input_text("file###kf_path", opt.keyframe_path)
        for label, req in (("save key (K)", "save_keyframe"), ("load key (L)", "load_keyframe")):
            if imgui.button(f"{label}###{req}"):
                opt.request = req
            _rect(req)
            imgui.same_line()
        if imgui.button("reload (F5)###reload"):
            opt.request = "reload"
        _rect("reload")
        imgui.same_line()
        if imgui.button("screenshot (P)###screenshot"):
            opt.request = "screenshot"
        _rect("screenshot")
        imgui.same_line()
        if imgui.button("drop a box (B)###drop_box"):
            opt.request = "drop_box"
        _rect("drop_box")

    # --- the body picked with a click
    if opt.selected is not None and 0 <= opt.selected < s.model.nb:
        if imgui.collapsing_header("selected body###selected", imgui.TreeNodeFlags_.default_open):
            info = s.body_info(opt.selected)
            p = info["position"]
            imgui.text(f"{info['name']} (body {info['body']})   mass {info['mass']:.4g} kg")
            imgui.text(f"position  {p[0]:+.3f} {p[1]:+.3f} {p[2]:+.3f} m")
            R = info["rotation"]
            imgui.text(f"z axis    {R[0, 2]:+.3f} {R[1, 2]:+.3f} {R[2, 2]:+.3f}")
            f = sum((c["force"] for c in info["contacts"]), np.zeros(3))
            imgui.text(f"contacts {len(info['contacts'])}  force {f[0]:+.1f} {f[1]:+.1f} {f[2]:+.1f} N")
            if s.perturb is not None and s.perturb[0] == opt.selected:
                g = s.perturb[2]
                imgui.text(f"drag force {g[0]:+.1f} {g[1]:+.1f} {g[2]:+.1f} N")

    # --- display toggles
    if imgui.collapsing_header("display###display", imgui.TreeNodeFlags_.default_open):
        for attr, label in (
            ("show_visual", "visual meshes"),
            ("show_collision", "collision geometry"),
            ("show_contacts", "contact points"),
            ("show_normals", "contact normals"),
            ("show_frames", "joint frames"),
            ("show_com", "centre of mass"),
            ("show_grid", "ground grid"),
            ("show_forces", "contact / drag forces"),
            ("follow", "camera follows robot"),
        ):
            c, v = imgui.checkbox(f"{label}###{attr}", getattr(opt, attr))
            if c:
                setattr(opt, attr, v)

    # --- plots
    if imgui.collapsing_header("plots###plots", imgui.TreeNodeFlags_.default_open):
        h = s.histories()
        t = h["t"]
        for key, label in (
            ("energy", "total energy [J]"),
            ("iterations", "solver iterations"),
            ("tracking_error", "tracking error [rad]"),
        ):
            if implot.begin_plot(f"{label}###plot_{key}", imgui.ImVec2(-1, 110)):
                implot.setup_axes("t [s]", "", implot.AxisFlags_.auto_fit, 0)
                implot.setup_axis_format(implot.ImAxis_.y1, "%.4g")
                lo, hi = plot_limits(h[key])
                implot.setup_axis_limits(implot.ImAxis_.y1, lo, hi, implot.Cond_.always)
                if len(t) > 1:
                    implot.plot_line(key, np.ascontiguousarray(t), np.ascontiguousarray(h[key]))
                implot.end_plot()
    imgui.end()


class StandInRenderer:
    """Replaces a GL renderer in tests: claims texture support, marks textures as uploaded and
    throws the draw data away."""

    def __init__(self):
        io = imgui.get_io()
        io.backend_flags |= imgui.BackendFlags_.renderer_has_textures
        self._next_id = 1

    def render(self, draw_data) -> int:
        for tex in imgui.get_platform_io().textures:
            if tex.status == imgui.ImTextureStatus.want_create:
                tex.set_tex_id(self._next_id)
                self._next_id += 1
                tex.status = imgui.ImTextureStatus.ok
            elif tex.status == imgui.ImTextureStatus.want_updates:
                tex.status = imgui.ImTextureStatus.ok
            elif tex.status == imgui.ImTextureStatus.want_destroy:
                tex.status = imgui.ImTextureStatus.destroyed
        return draw_data.total_vtx_count
