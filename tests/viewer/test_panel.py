"""Panel logic with no GL at all: imgui IO events into the real panel code, stand-in renderer."""

import numpy as np
import pytest

pytest.importorskip("imgui_bundle")

import pbsim  # noqa: E402
from pbsim_models import chain  # noqa: E402
from pbsim_viewer.session import Session  # noqa: E402


@pytest.fixture
def driver():
    from tests.viewer._panel_driver import PanelDriver

    s = Session(chain(3), dt=1e-3, kp=100.0, kd=5.0)
    d = PanelDriver(s)
    yield d
    d.close()


def test_pause_button_toggles(driver):
    s = driver.s
    assert not s.playing
    driver.click("pause")
    assert s.playing
    driver.click("pause")
    assert not s.playing


def test_step_and_reset_buttons(driver):
    s = driver.s
    driver.click("step")  # a request run by the next frame's update (after the compile notice)
    assert s.step_requests == 1 and s.steps == 0
    assert s.update(1 / 60) == 1 and s.step_requests == 0
    assert s.steps == 1 and s.time == pytest.approx(1e-3)
    driver.frame()  # the notice line may have changed height: lay the panel out again, as the app does
    driver.click("reset")
    assert s.steps == 0 and s.time == 0.0


def test_dt_slider_drag_is_logarithmic(driver):
    s = driver.s
    driver.drag("dt", 0.5, 0.95)
    # log scale from 1e-4 to 0.2: 95 % of the width is far above the linear midpoint's log value
    assert s.dt > 0.05
    driver.drag("dt", 0.5, 0.02)
    assert 1e-4 <= s.dt < 2e-4


def test_dt_typed_value(driver):
    s = driver.s
    from imgui_bundle import imgui

    driver.click("dt_typed")  # focus the text field, select all, type, enter
    driver.io.add_key_event(imgui.Key.mod_ctrl, True)
    driver.key(imgui.Key.a)
    driver.io.add_key_event(imgui.Key.mod_ctrl, False)
    driver.type("0.0125")
    assert s.dt == pytest.approx(0.0125)
    # out of range is clamped, never crashes
    driver.click("dt_typed")
    driver.io.add_key_event(imgui.Key.mod_ctrl, True)
    driver.key(imgui.Key.a)
    driver.io.add_key_event(imgui.Key.mod_ctrl, False)
    driver.type("5")
    assert s.dt == pytest.approx(0.2)


def test_ctrl_click_kp_and_type(driver):
    from imgui_bundle import imgui

    s = driver.s
    driver.click("kp", ctrl=True)  # ctrl-click turns the slider into a text field
    driver.io.add_key_event(imgui.Key.mod_ctrl, True)
    driver.key(imgui.Key.a)
    driver.io.add_key_event(imgui.Key.mod_ctrl, False)
    driver.type("1234.5")
    assert s.kp_global == pytest.approx(1234.5)
    assert np.allclose(s.kp[s.actuated], 1234.5)
    ctl = s.control()
    assert np.allclose(ctl.kp, 1234.5)


def test_integrator_combo_pick(driver):
    s = driver.s
    names = pbsim.integrators.available()
    target = names[-1]
    assert s.integrator_name != target
    from pbsim_viewer.panel import ITEM_RECTS

    driver.click("integrator")
    # the open popup lists every name (no scrolling) below the combo; the panel records each rect
    k = names.index(target)
    x0, y0, x1, y1 = ITEM_RECTS[f"integrator_item_{k}"]
    assert y0 >= ITEM_RECTS["integrator"][3] - 1 and y1 - y0 > 5
    driver.click(at=((x0 + x1) / 2, (y0 + y1) / 2))
    assert s.integrator_name == target
