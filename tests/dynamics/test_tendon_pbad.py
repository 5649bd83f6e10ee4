"""Tendons (issue 29) in pbad and pbad3: the damped arm comes to rest at MuJoCo's equilibrium,
the limited tendon holds its range (models and checks in test_tendon.py; a file of its own so that
these step kernels compile on another test worker than the explicit ones)."""

import pytest
from test_tendon import range_holds, rests_where_mujoco_does


@pytest.mark.parametrize("method,dt", [("pbad", 0.02), ("pbad", 0.05), ("pbad3", 0.05)])
def test_position_based_step_rests_where_mujoco_does(tmp_path, method, dt):
    rests_where_mujoco_does(tmp_path, method, dt)


@pytest.mark.parametrize("method,dt", [("pbad", 0.02)])
def test_tendon_range_holds(tmp_path, method, dt):
    range_holds(tmp_path, method, dt)
