"""The integrator contract: a method is a class with an option spec and a step kernel
(StepSpec); the generic drivers (Integrator.step, CpuBatch, the CLI's flags) run it with no
edit anywhere else."""

from __future__ import annotations

from collections import namedtuple

import numpy as np
import pytest

import pbsim
import pbsim_models
from pbsim.backends.cpu import CpuBatch
from pbsim.jit import kernel
from pbsim.errors import InputError
from pbsim.integrators import Integrator, Option, State, StepSpec, available, make, register, step_spec
from pbsim.integrators import base
from pbsim.integrators.explicit.step import TABLEAUS, rk_state

ToyX = namedtuple("ToyX", "A wts")


@kernel
def toy_step(m, s, c, w, sw, x, b, q, v, dt, qn, vn):
    rk_state(m, s, c, w, sw, b, q, v, dt, x.A, x.wts, qn, vn)


def _toy_extra(integ, B):
    A, wts = TABLEAUS[integ.options.get("tableau", "rk2")]
    return ToyX(np.ascontiguousarray(A), np.ascontiguousarray(wts))


@pytest.fixture
def toy():
    @register("toy_rk", doc="test: RK through the contract only")
    class ToyRK(Integrator):
        name = "toy_rk"
        OPTIONS = (Option("tableau", "rk2", "which Butcher tableau", "str", tuple(TABLEAUS)),)
        STEP = StepSpec(toy_step, extra=_toy_extra)

    yield ToyRK
    base._REGISTRY.pop("toy_rk")


def test_a_method_added_by_its_class_alone_runs_everywhere(toy):
    model = pbsim_models.chain(3)
    assert "toy_rk" in available() and step_spec("toy_rk") is toy.STEP
    q0 = pbsim.integrate(model, model.neutral(), np.array([0.3, -0.2, 0.1]))
    s = State.make(model, q0, batch=4)
    ref, _ = make("rk4", model).step(s, None, 0.01)
    new, d = make("toy_rk", model, tableau="rk4").step(s, None, 0.01)  # the generic host driver
    assert np.array_equal(new.q, ref.q) and np.array_equal(new.v, ref.v)
    assert np.allclose(d.energy, pbsim.energy(model, new.q, new.v).sum(axis=1))
    cb = CpuBatch(model, "toy_rk", batch=4, tableau="rk4")  # the generic batch driver
    cb.set_state(q0)
    cb.advance(1, 0.01)
    assert np.array_equal(cb.state()[0], ref.q)
    with pytest.raises(InputError, match="did you mean 'tableau'"):
        make("toy_rk", model, tablau="rk4")
    from pbsim.cli import build_parser

    args = build_parser().parse_args(["rollout", "chain3", "--integrator", "toy_rk", "--tableau", "rk3"])
    from pbsim.cli import integrator_options_from_args

    assert integrator_options_from_args(args) == {"tableau": "rk3"}


def test_cli_flag_of_another_method_is_refused():
    from pbsim.cli import build_parser, integrator_options_from_args

    args = build_parser().parse_args(["rollout", "chain3", "--integrator", "rk4", "--gtol", "1e-6"])
    with pytest.raises(pbsim.PbsimError, match="--gtol applies to pbad/pbad3/pbad4 only"):
        integrator_options_from_args(args)
    args = build_parser().parse_args(
        ["rollout", "chain3", "--integrator", "variational", "--vi-max-iter", "7", "--init", "current"]
    )
    assert integrator_options_from_args(args) == {"max_iterations": 7, "init": "current"}


def test_every_method_has_a_step():
    for n in available():
        cls = base._entry(n)[0]
        assert cls.STEP is not None or cls._step is not Integrator._step, n


def test_batch_drivers_name_the_methods_they_can_run():
    model = pbsim_models.chain(2)
    with pytest.raises(InputError, match="no step kernel for CpuBatch.*euler"):
        CpuBatch(model, "variational", batch=2)


def test_variational_old_and_new_option_names_agree():
    model = pbsim_models.chain(3)
    a = make("variational", model, init="current", xtol=1e-10, max_iterations=5)
    b = make("variational", model, ig=1, tol=1e-10, max_iter=5)
    assert (a.ig, a.tol, a.max_iter) == (b.ig, b.tol, b.max_iter) == (1, 1e-10, 5)
    with pytest.raises(InputError, match="not both"):
        make("variational", model, ig=1, init="current")


def test_state_carry_is_the_integrators_slot():
    model = pbsim_models.chain(3, joint="ball2")
    s0 = State.make(model, pbsim.integrate(model, model.neutral(), 0.1 * np.ones(model.nv)))
    s1, _ = make("pbad3", model).step(s0, None, 0.01)
    assert set(s1.carry) == {"pbad3"} and s1.carry["pbad3"][0] == 0.01
    c = s1.copy()
    assert c.carry["pbad3"][1] is not s1.carry["pbad3"][1]
    assert np.array_equal(c.carry["pbad3"][1], s1.carry["pbad3"][1])
    c.reset_history()
    assert c.carry == {} and c.q_prev is None
