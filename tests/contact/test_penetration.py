"""A run that pushes a body into the environment is flagged (issue #16 item 5): every integrator's
Diagnostics carry the deepest contact point; rollout raises (on_nan="raise") or warns ("stop")."""

from __future__ import annotations

import numpy as np
import pytest

import pbsim
import pbsim_models


@pytest.fixture(scope="module")
def dropped():
    m = pbsim_models.chain(2)  # a fixed-base chain
    probe = pbsim.make_scene(m, ground="plane", ground_height=-100.0)
    X = pbsim.contact_query(m, probe, m.neutral()[None])["X"][0]
    low = float((X[:, 2] - probe.contact_points().radius).min())
    sc = pbsim.make_scene(m, ground="plane", ground_height=low + 0.01)  # its lowest point 1 cm deep
    return m, sc


@pytest.mark.parametrize("name", ["euler", "rk4", "pbad"])
def test_diagnostics_report_the_deepest_point(dropped, name):
    m, sc = dropped
    integ = pbsim.integrators.make(name, m, sc)
    s = pbsim.State.make(m, batch=2)
    _, d = integ.step(s, None, 1e-3)
    q = s.q.copy()
    ref = pbsim.contact_query(m, sc, q)["d"].max(axis=1)
    new, d = integ.step(s, None, 1e-3)
    depth = pbsim.contact_query(m, sc, new.q)["d"].max(axis=1)
    assert d.penetration is not None and np.allclose(d.penetration, depth, atol=1e-12)
    assert (ref > 0).all() and not d.deep.any()  # touching, not sunk


def test_rollout_raises_or_warns_on_a_sinking_body(dropped):
    m, sc = dropped
    sc.max_penetration = 1e-6  # any contact is "too deep" here: the mechanism, not the bound, is tested
    try:
        with pytest.raises(pbsim.SimulationError, match="sank"):
            pbsim.rollout(m, "euler", dt=1e-3, steps=5, scene=sc)
        with pytest.warns(pbsim.PbsimWarning, match="sank"):
            tr = pbsim.rollout(m, "euler", dt=1e-3, steps=5, scene=sc, on_nan="stop")
        assert tr.info["max_penetration"] > 0
    finally:
        sc.max_penetration = 0.05
    tr = pbsim.rollout(m, "euler", dt=1e-3, steps=5, scene=sc)
    assert 0 < tr.info["max_penetration"] < 0.05
