"""rollout's compiled step loop (pbsim.integrators.driver.rollout_batch, issue #21): the same
trajectories as the Python step loop, bit for bit -- frames, energies, times, divergence flags
and reasons, penetration, solver iterations -- for explicit and implicit methods, contact,
SPD control, batches whose rows stop at different steps, and the Python loop's events
(divergence, sub-stepped solver failures, a body sinking)."""

from __future__ import annotations

import sys
import warnings

import numpy as np
import pytest

import pbsim
import pbsim_models
from pbsim.errors import PbsimWarning, SimulationError
from pbsim.integrators.base import Integrator
from pbsim.model.builder import LinkSpec, ModelBuilder
from pbsim.model.geometry import Geometry

R = sys.modules["pbsim.rollout"]


def _box(half=0.1, mass=1.0):
    b = ModelBuilder("box")
    link = LinkSpec("box", mass, np.zeros(3), mass / 3 * np.diag([2 * half * half] * 3))
    link.geoms.append(Geometry("box_c", "box", -1, np.eye(3), np.zeros(3), np.full(3, half), "collision"))
    b.add_link(link)
    return b.build(floating_base=True)


def _both(*args, **kw):
    """(python loop, kernel loop) of the same rollout (same warnings); ``b.python_steps``: the
    steps the kernel loop handed to the Python step (its events)."""
    out = []
    calls = []
    step = Integrator.step

    def counted(self, *a, **k):
        calls.append(1)
        return step(self, *a, **k)

    for compiled in (False, True):
        R.COMPILED_LOOP = compiled
        calls.clear()
        try:
            Integrator.step = counted
            with warnings.catch_warnings(record=True) as ws:
                warnings.simplefilter("always")
                tr = pbsim.rollout(*args, **kw)
        finally:
            R.COMPILED_LOOP = True
            Integrator.step = step
        tr.python_steps = len(calls)
        out.append((tr, [str(w.message) for w in ws if issubclass(w.category, PbsimWarning)]))
    (a, wa), (b, wb) = out
    assert a.info["loop"] == "python"
    assert wa == wb
    return a, b


def _same(a, b, loop="kernel"):
    assert b.info["loop"] == loop
    for f in ("t", "q", "v", "energy"):
        x, y = getattr(a, f), getattr(b, f)
        assert x.shape == y.shape and np.array_equal(x, y, equal_nan=True), f
    assert (a.diverged is None) == (b.diverged is None)
    if a.diverged is not None:
        assert np.array_equal(a.diverged, b.diverged)
    for k in ("max_penetration", "divergence", "iterations", "unconverged_steps", "fallback_steps"):
        assert (k in a.info) == (k in b.info), k
        if k in a.info:
            x, y = a.info[k], b.info[k]
            assert np.array_equal(x, y) if isinstance(x, np.ndarray) else x == y, k


@pytest.mark.parametrize("name,dt", [("euler", 1e-3), ("rk4", 2e-3), ("pbad", 0.02)])
def test_chain_bit_identical(name, dt):
    m = pbsim_models.by_name("chain10")
    q0 = np.linspace(0.3, -0.4, m.nq)
    a, b = _both(m, name, dt=dt, steps=60, q0=q0, record_every=4)
    _same(a, b)
    assert b.python_steps == 0
    if name == "pbad":
        assert b.info["iterations"] > 60 and b.info["unconverged_steps"] == 0


def test_batch_spd_control_bit_identical():
    """SPD toward a target with per-row gains, a batch of 5 (the rows run on several threads)."""
    m = pbsim_models.by_name("chain10")
    q0 = np.stack([np.full(m.nq, 0.1 * i) for i in range(5)])
    kp = np.stack([np.full(m.nv, 5.0 + i) for i in range(5)])
    ctrl = pbsim.Control(mode="spd", kp=kp, kd=0.5, q_ref=np.full(m.nq, 0.2))
    a, b = _both(m, "euler", dt=5e-3, steps=50, q0=q0, control=ctrl, record_every=7)
    _same(a, b)


def test_callable_control_keeps_the_python_loop():
    m = pbsim_models.by_name("chain10")
    ref = pbsim.Reference(m, q=np.zeros(m.nq), kp=5.0, kd=0.5)
    tr = pbsim.rollout(m, "euler", dt=1e-3, steps=5, control=ref)
    assert tr.info["loop"] == "python"


@pytest.mark.parametrize(
    "name,dt,opts", [("pbfd", 0.05, {}), ("euler", 2e-3, {}), ("pbfd", 0.1, dict(max_iterations=2, substep=3))]
)
def test_contact_bit_identical(name, dt, opts):
    """A box dropped and sliding on the floor, 3 rows; with an iteration cap of 2 pbfd's steps stall
    and are sub-stepped inside the step kernel (issue 30), counted alike in both loops; a sub-step
    still unconverged at the last level hands its step to the Python step (the rows stop at
    different steps and are rewound)."""
    m = _box()
    scene = pbsim.make_scene(m, ground="plane", mu=0.5)
    q0 = np.tile(m.neutral(), (3, 1))
    q0[:, 2] = [0.15, 0.12, 0.2]
    v0 = np.zeros((3, m.nv))
    v0[:, 0] = [1.0, 0.0, -0.5]
    a, b = _both(m, name, dt=dt, steps=25 if dt > 0.01 else 300, q0=q0, v0=v0, scene=scene, record_every=2, **opts)
    _same(a, b)
    if opts:  # stalled steps were sub-stepped by the kernel, in both loops
        assert b.info["fallback_steps"].sum() > 0 and b.python_steps < 25


def test_divergence_bit_identical():
    """euler at a dt far beyond its stability: 'stop' freezes the rows that diverge (at different
    steps), 'raise' names the same step and row."""
    m = pbsim_models.by_name("chain10")
    q0 = np.stack([np.full(m.nq, 0.2), np.full(m.nq, 1.0), np.zeros(m.nq)])
    v0 = np.zeros((3, m.nv))
    v0[1] = 30.0
    a, b = _both(m, "euler", dt=0.01, steps=120, q0=q0, v0=v0, on_nan="stop")
    _same(a, b)
    assert b.diverged.sum() == 2 and len({d["step"] for d in b.info["divergence"] if d}) == 2
    assert b.python_steps == 2  # the two first divergences; frozen rows stay in the kernel
    msgs = []
    for compiled in (False, True):
        R.COMPILED_LOOP = compiled
        try:
            with pytest.raises(SimulationError) as e:
                pbsim.rollout(m, "euler", dt=0.01, steps=120, q0=q0[[0, 2]], v0=v0[[0, 2]])
        finally:
            R.COMPILED_LOOP = True
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1]


def test_sinking_warns_once_bit_identical():
    """A heavy box on soft contact sinks past Scene.max_penetration: one warning ('stop'), the
    same frames and deepest point."""
    m = _box(mass=200.0)
    scene = pbsim.make_scene(m, ground="plane", stiffness=2e3)
    q0 = m.neutral()
    q0[2] = 0.1
    a, b = _both(m, "euler", dt=1e-3, steps=400, q0=q0, scene=scene, on_nan="stop")
    _same(a, b)
    assert b.info["max_penetration"] > scene.max_penetration and b.python_steps == 1


def test_a_row_that_stops_late_replays_at_most_an_eighth(monkeypatch):
    """Issue 30: a row's stop (here the sinking warning) rewinds every row of the batch to the
    start of the kernel call and replays it; the first call ran the whole rollout, so a stop late
    in it doubled the run (a1 nmdp at 20 ms, one start passing the depth bound at step 93 of 100:
    rollout 1.4 s/s against CpuBatch's 0.72).  Calls now span at most an eighth of the steps (at
    least 16) when B > 1: the replay is bounded by that, the frames the same to the bit."""
    m = _box(mass=200.0)
    scene = pbsim.make_scene(m, ground="plane", stiffness=2e3)
    q0 = np.tile(m.neutral(), (2, 1))
    q0[0, 2], q0[1, 2] = 0.1, 10.0  # row 0 lands and sinks, row 1 falls freely throughout
    ran = []
    make = R._KernelLoop.make

    def counting(*a, **k):
        loop = make(*a, **k)
        drv = loop.drv

        def counted(*args):
            ran.append(int(args[14]))  # the call's nsteps
            return drv(*args)

        loop.drv = counted
        return loop

    monkeypatch.setattr(R._KernelLoop, "make", staticmethod(counting))
    a, b = _both(m, "euler", dt=1e-3, steps=400, q0=q0, scene=scene, on_nan="stop")
    _same(a, b)
    assert b.info["max_penetration"][0] > scene.max_penetration and b.python_steps == 1
    assert sum(ran) <= 400 + 50, ran  # the kernel's steps, replays included (before: 400 + the stop's step)
