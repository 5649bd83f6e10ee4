"""Tendons (issue 29) in pbfd, pbd_nmdp and variational: the damped arm comes to rest at MuJoCo's
equilibrium (models and check in test_tendon.py; a file of its own so that these step kernels
compile on another test worker than pbad's and the explicit ones)."""

import pytest
from test_tendon import rests_where_mujoco_does


@pytest.mark.parametrize("method,dt", [("pbfd", 0.02), ("pbd_nmdp", 0.02), ("variational", 0.01)])
def test_position_based_step_rests_where_mujoco_does(tmp_path, method, dt):
    rests_where_mujoco_does(tmp_path, method, dt)
