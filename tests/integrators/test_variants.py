"""Kernel variants: a step compiles only the optional parts (dense SPD solvers and clamping,
contact) that a run uses, and gives the same numbers as the full kernel."""

from __future__ import annotations

import numpy as np
import pytest
from numba import prange

import pbsim
import pbsim_models
from pbsim.jit import Variants, kernel, unused
from pbsim.errors import InputError
from pbsim.jit.build import BatchKernel, compiled
from pbsim.dynamics import energy as en
from pbsim.integrators.driver import driver, rollout_batch, step_batch
from pbsim.integrators.explicit import step as ex
from pbsim.integrators.explicit.forces import FEATURES, features_used


def _kc(m, **kw):
    return pbsim.Control(**kw).kernel_arrays(m, 1)


def test_features_follow_the_flags_the_kernels_branch_on():
    m = pbsim_models.chain(3)
    none = pbsim.Scene().kernel_arrays(m)
    ground = pbsim.make_scene(m, ground="plane").kernel_arrays(m)
    assert features_used(_kc(m), none) == {
        "spd_extra": False,
        "contact": False,
        "body_contact": False,
        "equality": False,
        "limits": False,
    }
    assert features_used(_kc(m), none, m.k)["equality"] is False  # no equality constraints (test_equality.py)
    assert features_used(_kc(m), none, m.k)["limits"] is False  # no MJCF ranges (test_limits_mujoco.py)
    assert features_used(_kc(m, mode="spd", kp=1.0, kd=1.0), none)["spd_extra"] is False  # MABA
    for solver in ("df", "sf"):
        assert features_used(_kc(m, mode="spd", kp=1.0, kd=1.0, spd_solver=solver), none)["spd_extra"] is True
    assert features_used(_kc(m, clamp=True), none)["spd_extra"] is True
    assert features_used(_kc(m), ground)["contact"] is True
    two = pbsim.combine(m, (pbsim.free_object("box", (0.05, 0.05, 0.05), 0.5), (0.0, 0.0, 1.0)))
    ks = pbsim.make_scene(two, ground=None).kernel_arrays(two)
    assert ks.nitem > 0 and features_used(_kc(two), ks) == {
        "spd_extra": False,
        "contact": False,
        "body_contact": True,
        "equality": False,
        "limits": False,
    }


def test_variant_swaps_only_the_named_kernels():
    full = driver(rollout_batch, ex.euler_step)
    v = Variants(full, FEATURES)
    assert v(spd_extra=True, contact=True, body_contact=True) is full
    lean = v(reuse=False, spd_extra=False, contact=False, body_contact=False)
    assert lean is v(reuse=False, spd_extra=False, contact=False, body_contact=False) and lean is not full
    g = lean.rows.py_func.__globals__
    step = g["_step"]
    assert step is not ex.euler_step  # the tree above a swapped kernel is copied ...
    st = step.py_func.__globals__["euler_state"]
    assert st is not ex.euler_state
    fd = st.py_func.__globals__["forward_dynamics"]
    assert fd.py_func.__globals__["contact_generalized_forces"] is unused
    assert fd.py_func.__globals__["pair_generalized_forces"] is unused
    from pbsim.control import solve

    sc = fd.py_func.__globals__["solve_and_clamp"].py_func.__globals__
    assert sc["clamp_active_set"] is unused
    assert sc["accel_solve"].py_func.__globals__["spd_dense"] is unused
    # ... and kernels outside it are shared, not copied
    assert g["energy_state"] is en.energy_state and solve.accel_solve is not sc["accel_solve"]
    with pytest.raises(KeyError):
        v(bogus=True)


def test_lean_variant_equals_the_full_kernel():
    """Same inputs through the lean build (what a torque-controlled run without contact uses) and
    the full build: identical to the last bit."""
    m = pbsim_models.chain(3)
    integ = pbsim.integrators.make("euler", m)
    st = pbsim.State.make(m, m.random_configuration(np.random.default_rng(1)), np.ones(m.nv))
    kc = _kc(m, tau=np.linspace(-1, 1, m.nv))
    w, sw, ks, x = integ.scratch(1)
    out = []
    lean = driver(step_batch, ex.euler_step, FEATURES, dict(spd_extra=False, contact=False), reuse=False)
    for drv in (lean, driver(step_batch, ex.euler_step)):
        qn, vn, e = np.empty_like(st.q), np.empty_like(st.v), np.empty((1, 2))
        drv(m.k, ks, kc, w, sw, x, st.q, st.v, 1e-3, qn, vn, e)
        out.append(np.concatenate([qn.ravel(), vn.ravel(), e.ravel()]))
    assert np.array_equal(out[0], out[1]) and np.all(np.isfinite(out[0]))


def test_pbad_step_compiles_one_optimizer():
    """PBAD2's step keeps its runtime optimizer switch, but an LM run's build stands in for LBFGS
    (and its M^-1 factor) and the reverse, so neither compiles the other."""
    from pbsim.integrators.pbad import order2 as P

    for lm in (True, False):
        drv = P.PBAD2(reuse=False, points=True, lm=lm, lbfgs=not lm)
        st = drv.rows.py_func.__globals__["pbad2_state"].py_func.__globals__
        assert (st["pbad2_lbfgs"] is unused) == lm and (st["pbad2_lm"] is unused) == (not lm)


# a toy step tree for the reuse rule: two optional parts, each adding to the row
@kernel
def _part_a(x, i):
    x[i] += 1.0


@kernel
def _part_b(x, i):
    x[i] += 10.0


@kernel
def _toy_row(x, flags, i):
    if flags[0]:
        _part_a(x, i)
    if flags[1]:
        _part_b(x, i)


def _toy_batch(x, flags):
    for i in prange(x.shape[0]):
        _toy_row(x, flags, i)


TOY = {"a": ("_part_a",), "b": ("_part_b",)}


def test_a_compiled_build_of_more_features_stands_in_for_an_uncompiled_one(monkeypatch):
    """``Variants(..., reuse=True)`` (what every run uses) takes an already compiled build that has
    more features on, in this process or in the disk cache, instead of compiling the exact one:
    its extra parts branch on the run's flags and give the same numbers."""
    monkeypatch.setenv("PBSIM_VARIANTS", "reuse")  # the users' default (the suite runs "full")
    v = Variants(BatchKernel(_toy_batch), TOY)
    only_b = v.build(("a",))
    x = np.zeros(4)
    only_b(x, np.array([False, True]))  # compile the build without part a
    assert np.all(x == 10.0) and compiled(only_b)
    assert v(reuse=False, a=False, b=False) is not only_b  # the exact build ...
    assert v(a=False, b=False) is only_b  # ... is not compiled: the compiled one with part b stands in
    y = np.zeros(4)
    v(a=False, b=False)(y, np.array([False, False]))
    assert np.all(y == 0.0)  # part b is in the build, but off
    assert v(a=False) is only_b  # the exact build, compiled
    assert v(b=False) is v.build(("b",))  # nothing compiled has part a: the exact build
    # the disk cache counts too: a new process's build of the same source finds it compiled
    assert compiled(Variants(BatchKernel(_toy_batch), TOY).build(("a",)))
    assert not compiled(Variants(BatchKernel(_toy_batch), TOY).build(("a", "b")))


def test_a_build_carrying_a_heavy_feature_unused_does_not_stand_in(monkeypatch):
    """A heavy feature (pbsim.jit.HEAVY_FEATURES: the equality and limit kernels, whose mere
    presence made the free euler step 28-45 % slower) is never carried unused: a run without it
    compiles its own build although one with it is compiled."""
    monkeypatch.setenv("PBSIM_VARIANTS", "reuse")
    v = Variants(BatchKernel(_toy_batch), TOY, heavy={"b"})
    only_b = v.build(("a",))
    only_b(np.zeros(2), np.array([False, True]))
    assert compiled(only_b)
    w = Variants(BatchKernel(_toy_batch), TOY, heavy={"b"})  # a fresh picker (Variants memoises its picks)
    assert w(a=False, b=False) is w.build(("a", "b"))  # b is heavy: only_b does not stand in
    only_a = w.build(("b",))
    only_a(np.zeros(2), np.array([True, False]))
    u = Variants(BatchKernel(_toy_batch), TOY, heavy={"b"})
    assert u(a=False, b=False) in (u.build(("b",)), u.build(("a", "b")))  # a is not heavy: may be carried
    assert u(a=False, b=False) is not u.build(("a",))
    x = np.zeros(2)
    u(a=False, b=False)(x, np.array([False, False]))
    assert np.all(x == 0.0)


def test_the_full_policy_takes_the_full_build_and_a_bad_policy_is_named(monkeypatch):
    """``$PBSIM_VARIANTS=full`` (the test suite's setting): every reusing call gets the build of all
    features, which gives the lean build's numbers; exact calls still get the exact build."""
    v = Variants(BatchKernel(_toy_batch), TOY)
    monkeypatch.setenv("PBSIM_VARIANTS", "full")
    assert v(a=False, b=False) is v.driver and v(b=False) is v.driver
    assert v(reuse=False, a=False) is v.build(("a",)) is not v.driver
    x, y = np.zeros(3), np.zeros(3)
    v(a=False)(x, np.array([False, True]))
    v(reuse=False, a=False)(y, np.array([False, True]))
    assert np.all(x == 10.0) and np.array_equal(x, y)
    monkeypatch.setenv("PBSIM_VARIANTS", "lean")
    with pytest.raises(InputError, match="PBSIM_VARIANTS='lean'"):
        v(a=False)


_TIED = """<mujoco><worldbody>
  <body name="a"><joint name="ja" axis="0 1 0"/><geom type="capsule" fromto="0 0 0 0 0 -.2" size=".02"/></body>
  <body name="b" pos=".1 0 0"><joint name="jb" axis="0 1 0"/><geom type="capsule" fromto="0 0 0 0 0 -.2" size=".02"/></body>
</worldbody><equality><joint joint1="ja" joint2="jb"{a}/></equality></mujoco>"""


@pytest.mark.parametrize("method", ["pbad", "pbfd", "pbd_friction", "nmdp", "pbd_nmdp", "ne_mdp", "ne_dry"])
def test_steps_compile_the_equality_kernels_only_for_models_that_have_them(method, tmp_path):
    """A model without active equality constraints runs a build whose step tree reaches no kernel of
    :mod:`pbsim.dynamics.equality` but the penalty stiffness (carried unused they made pbfd's free
    step 26 % slower, docs/robots.md "Cost"); a model with them gets the full tree."""
    from pbsim.integrators.base import step_spec
    from pbsim.jit import python_source
    from pbsim.jit.twin import kernel_tree

    spec = step_spec(method)
    for active, want in ((' active="false"', False), ("", True)):
        (tmp_path / "m.xml").write_text(_TIED.format(a=active))
        m = pbsim.load(tmp_path / "m.xml")
        integ = pbsim.integrators.make(method, m)
        features, used = spec.variant(integ, _kc(m), pbsim.Scene().kernel_arrays(m))
        assert used["equality"] is want
        drv = driver(step_batch, spec.step, features, used, reuse=False)
        tree = (python_source(k) for k in kernel_tree(drv.rows.py_func.__globals__["_step"]))
        eq = {f"{f.__module__}.{f.__name__}" for f in tree if f.__module__ == "pbsim.dynamics.equality"}
        if want:
            assert "pbsim.dynamics.equality.equality_project_mass" in eq, eq
            assert ("pbsim.dynamics.equality.equality_penalty" in eq) == (method not in ("ne_mdp", "ne_dry")), eq
        else:
            assert eq <= {"pbsim.dynamics.equality.equality_penalty_stiffness"}, eq
