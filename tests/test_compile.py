"""First-run compilation: the notice, its time kept apart, and what must not compile twice."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numba
import numpy as np
import pytest

import pbsim
import pbsim_models
from pbsim.jit import CompileWatch, InnerKernel, kernel


def _fresh_kernels():
    """Two kernels made here (not cached), so that their first call really compiles."""

    @kernel
    def scaled(x, flag):
        return 2.0 * x if flag else x

    @numba.njit(cache=False)
    def caller(x, flag):
        return scaled(x, True) + scaled(x, False) + scaled(x, flag)

    return scaled, caller


def test_notice_only_when_compiling_and_seconds_counted():
    scaled, caller = _fresh_kernels()
    said = []
    with CompileWatch("demo", notice=said.append, estimate_s=7) as cw:
        assert caller(1.5, True) == 3.0 + 1.5 + 3.0
    assert said == ["pbsim: compiling kernels for demo (first run only, ~7 s)..."]
    assert cw.seconds > 0 and cw.compilations >= 2
    said.clear()
    with CompileWatch("demo", notice=said.append) as cw2:
        caller(2.0, False)
    assert said == [] and cw2.seconds == 0.0 and cw2.compilations == 0


def test_literal_arguments_share_one_compilation():
    """f(x, True), f(x, False) and f(x, flag) are one specialization, not three."""
    scaled, caller = _fresh_kernels()
    caller(1.0, True)
    assert isinstance(scaled, InnerKernel)
    assert len(scaled.overloads) == 1, list(scaled.overloads)


def test_inner_kernel_is_callable_from_python():
    scaled, _ = _fresh_kernels()
    assert scaled(3.0, True) == 6.0 and scaled(3.0, False) == 3.0


def test_rollout_reports_compile_time_apart():
    m = pbsim_models.chain(2)
    tr = pbsim.rollout(m, "euler", dt=1e-3, steps=3)
    assert "compile_s" in tr.info and tr.info["compile_s"] >= 0.0


def test_read_only_inputs_do_not_recompile():
    """A read-only array (np.broadcast_to, a frozen user array) is another numba type: kernel
    inputs are copied to writable arrays, so such a control or scene compiles nothing new."""
    m = pbsim_models.chain(3)
    scene = pbsim.make_scene(m, ground="plane")
    kp = np.full(m.nv, 5.0)
    pbsim.rollout(m, "pbad", dt=0.02, steps=2, scene=scene, control=pbsim.Control(mode="spd", kp=kp, kd=1.0))
    frozen = kp.copy()
    frozen.flags.writeable = False
    with CompileWatch("pbad", notice=False) as cw:
        pbsim.rollout(
            m,
            "pbad",
            dt=0.02,
            steps=2,
            scene=pbsim.make_scene(m, ground="plane"),
            control=pbsim.Control(mode="spd", kp=frozen, kd=np.broadcast_to(1.0, (m.nv,))),
        )
    assert cw.compilations == 0


def test_models_with_given_limit_gains_do_not_recompile():
    """The model's own arrays likewise: limit gains given per joint (every combined model, an MJCF
    with its own limit stiffness) were broadcast views, read-only, and every kernel compiled a
    second time for such a model (the suite compiled ~10 drivers twice)."""
    m = pbsim_models.chain(3)
    two = pbsim.combine(m, (pbsim.free_object("box", (0.05, 0.05, 0.05), 0.5), (0.0, 0.0, 1.0)))
    assert two.limit_stiffness is not None
    assert all(a.flags.writeable for a in two.k if isinstance(a, np.ndarray))
    frozen = pbsim_models.chain(3)
    frozen.limit_damping = np.broadcast_to(0.5, (frozen.nv,))
    assert all(a.flags.writeable for a in frozen.k if isinstance(a, np.ndarray))
    pbsim.rollout(m, "euler", dt=1e-3, steps=2)
    with CompileWatch("euler", notice=False) as cw:
        pbsim.rollout(frozen, "euler", dt=1e-3, steps=2)
    assert cw.compilations == 0


def test_cli_summary_has_compile_s_and_wall_without_it():
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "pbsim",
            "rollout",
            "chain3",
            "--integrator",
            "euler",
            "--dt",
            "0.001",
            "--steps",
            "5",
            "--json",
            "--quiet",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["compile_s"] >= 0.0 and out["wall_s"] >= 0.0
    assert out["realtime_factor"] == pytest.approx(out["simulated_s"] / out["wall_s"], rel=1e-6)


def test_warmup_command():
    r = subprocess.run(
        [sys.executable, "-m", "pbsim", "warmup", "--integrators", "euler", "--configs", "single", "--jobs", "1"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "euler" in r.stdout and "single" in r.stdout and "warmed up 1 integrator" in r.stdout
    r = subprocess.run(
        [sys.executable, "-m", "pbsim", "warmup", "--integrators", "nope"], capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 2 and "unknown integrator" in r.stderr and "Traceback" not in r.stderr


KERNEL_MODULE = """
def f(x):
    return 2.0 * x + 1.0
"""

COMPILE_ONCE = """
import sys
sys.path.insert(0, sys.argv[1])
from numba.core import event
from pbsim.jit.build import cached_njit
import lockkern

n = [0]


class Count(event.Listener):
    def on_start(self, e):
        n[0] += 1

    def on_end(self, e):
        pass


event.register("numba:compile", Count())
print(cached_njit(lockkern.f)(1.0), n[0])
"""


def test_processes_that_start_together_compile_a_kernel_once(tmp_path):
    """A process that finds a kernel being compiled by another waits for it and loads it from the
    cache instead of compiling it too (pbsim.jit.lock): held here by the test itself, the lock keeps
    process A waiting while B compiles without it (timeout 0); released, A loads B's build."""
    fcntl = pytest.importorskip("fcntl")
    (tmp_path / "lockkern.py").write_text(KERNEL_MODULE)
    (tmp_path / "run.py").write_text(COMPILE_ONCE)
    env = {**os.environ, "PBSIM_CACHE_DIR": str(tmp_path / "cache")}
    where = (
        "import sys, numba; sys.path.insert(0, sys.argv[1]); import lockkern; from pbsim.jit.build import cached_njit; "
        "from pbsim.jit.lock import lock_path; print(lock_path(numba.config.CACHE_DIR, cached_njit(lockkern.f), "
        "(numba.float64,)))"
    )  # the lock of f's build for a float, as the processes below name it
    lock = Path(
        subprocess.run(
            [sys.executable, "-c", where, str(tmp_path)], env=env, capture_output=True, text=True, check=True
        ).stdout.strip()
    )
    lock.parent.mkdir(parents=True)
    cmd = [sys.executable, str(tmp_path / "run.py"), str(tmp_path)]
    with open(lock, "a") as held:
        fcntl.flock(held.fileno(), fcntl.LOCK_EX)
        a = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        b = subprocess.run(cmd, env={**env, "PBSIM_COMPILE_LOCK_TIMEOUT": "0"}, capture_output=True, text=True)
        assert b.returncode == 0, b.stderr
        assert b.stdout.split() == ["3.0", "1"]  # B compiled (the lock was not free) and saved
        assert a.poll() is None  # A is still waiting for the lock
    out, err = a.communicate(timeout=120)
    assert a.returncode == 0, err
    assert out.split() == ["3.0", "0"]  # A loaded B's build: no compilation of its own


def test_one_lock_per_build_not_per_name(tmp_path):
    """Two builds of one kernel for other argument types (one step driver bound to two methods) do
    not wait for each other: their lock files differ; one build's lock is the same in every process."""
    from pbsim.jit.build import cached_njit
    from pbsim.jit.lock import lock_path

    def g(x):
        return x

    d = cached_njit(g)
    a, b = lock_path(str(tmp_path), d, (numba.float64,)), lock_path(str(tmp_path), d, (numba.int64,))
    assert a != b and a == lock_path(str(tmp_path), d, (numba.float64,))
    assert (
        Path(a).parent == tmp_path / "locks"
        and "test_compile.test_one_lock_per_build_not_per_name.locals.g-" in Path(a).name
    )


# a toy tree for the linkage test: a kernel taking the whole model, called from a driver
@kernel
def _toy_leaf(m, x, i):
    s = 0.0
    for j in range(m.mass.shape[0]):
        s += m.mass[j] * x[i] + m.parent[j]
    x[i] = s


def _toy_driver(m, x):
    for i in range(x.shape[0]):
        _toy_leaf(m, x, i)
        _toy_leaf(m, x, i)


@pytest.mark.parametrize("internal", [True, False])
def test_kernels_below_a_driver_are_internal_to_its_build(internal, monkeypatch):
    """A top-level build (pbsim.jit.DriverLibrary) makes every function linked into it internal,
    so LLVM can drop the flattened model fields a kernel does not read and inline it
    (docs/architecture.md); ``PBSIM_INTERNALIZE=0`` keeps numba's ``linkonce_odr``."""
    from pbsim.jit import python_source
    from pbsim.jit.build import DriverLibrary, _DriverCompiler

    monkeypatch.setenv("PBSIM_INTERNALIZE", "1" if internal else "0")
    drv = numba.njit(pipeline_class=_DriverCompiler)(_toy_driver)
    m = pbsim_models.chain(3).k
    x, want = np.ones(4), np.ones(4)
    drv(m, x)
    for i in range(4):
        for _ in range(2):
            python_source(_toy_leaf)(m, want, i)
    assert np.array_equal(x, want)
    lib = drv.overloads[drv.signatures[0]].library
    assert isinstance(lib, DriverLibrary)
    odr = [ln for ln in lib.get_llvm_str().splitlines() if ln.startswith("define linkonce_odr")]
    assert (not odr) if internal else odr, odr
