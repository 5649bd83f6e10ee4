"""The per-call fast path (issue #21): pbsim.Data's aba/rnea/crba/forward_kinematics and
pbsim.Stepper's step give the validated API's results bit for bit; what the fast path checks
(lengths) and what it leaves to the validated API."""

from __future__ import annotations

import numpy as np
import pytest

import pbsim
import pbsim_models
from pbsim.errors import InputError


@pytest.fixture(scope="module", params=["chain10", "dog"])
def model(request):
    return pbsim_models.by_name(request.param)


def _state(m, seed=0):
    rng = np.random.default_rng(seed)
    return m.random_configuration(rng), rng.normal(size=m.nv), rng.normal(size=m.nv)


def test_data_equals_validated_api(model):
    m = model
    d = pbsim.Data(m)
    for seed in range(3):
        q, v, u = _state(m, seed)
        assert np.array_equal(d.aba(q, v, u), pbsim.aba(m, q, v, u))
        assert np.array_equal(d.rnea(q, v, u), pbsim.rnea(m, q, v, u))
        assert np.array_equal(d.crba(q), pbsim.crba(m, q))
        R, p = d.forward_kinematics(q)
        T = pbsim.forward_kinematics(m, q)
        assert np.array_equal(R, T[:, :3, :3]) and np.array_equal(p, T[:, :3, 3])
    assert d.aba(list(q), tuple(v), u) is d.qdd  # the buffer itself; any sequence of numbers goes in


def test_data_checks_lengths_not_values(model):
    m = model
    d = pbsim.Data(m)
    q, v, u = _state(m)
    with pytest.raises(ValueError):
        d.aba(q[:-1], v, u)
    with pytest.raises(ValueError):
        d.crba(np.zeros(m.nq + 1))
    bad = v.copy()
    bad[0] = np.nan
    assert np.isnan(d.aba(q, bad, u)).any()  # not checked here ...
    with pytest.raises(InputError):  # ... the validated API names it
        pbsim.aba(m, q, bad, u)


@pytest.mark.parametrize("name,dt", [("euler", 1e-3), ("rk4", 1e-3), ("pbad", 0.01)])
def test_stepper_equals_integrator_step(model, name, dt):
    m = model
    scene = pbsim.make_scene(m, ground="plane") if m.nq > m.nv else pbsim.Scene()
    q, v, _ = _state(m, 1)
    if m.nq > m.nv:
        q[2] = 0.3  # the dog's trunk above the ground, some feet touching
    ctrl = pbsim.Control(mode="spd", kp=20.0, kd=1.0, q_ref=m.neutral())
    st = pbsim.Stepper(m, name, dt=dt, scene=scene, control=ctrl)
    integ = pbsim.integrators.make(name, m, scene)
    s = pbsim.State.make(m, q, v)
    for _ in range(3):
        qn, vn = st.step(s.q[0], s.v[0])
        s, _d = integ.step(s, ctrl, dt)
        assert np.array_equal(qn, s.q[0]) and np.array_equal(vn, s.v[0])
    if name == "pbad":
        assert st.info[2] > 0.5


def test_stepper_refuses_methods_without_a_step_kernel():
    with pytest.raises(InputError, match="no step kernel"):
        pbsim.Stepper(pbsim_models.by_name("chain10"), "variational")
    with pytest.raises(InputError):
        pbsim.Stepper(pbsim_models.by_name("chain10"), "euler", control=lambda t, s: None)
