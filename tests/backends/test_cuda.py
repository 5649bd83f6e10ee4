"""The CUDA backend: same kernels as the CPU (run by numba's simulator here, on a GPU when
there is one), and a clear pbsim error when there is no GPU."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import pybullet_file

ROOT = Path(__file__).resolve().parents[2]
CHECK = Path(__file__).with_name("cudasim_check.py")

pytest.importorskip("numba.cuda", reason="numba-cuda is not installed (pip install 'numba-cuda>=0.30')")


def _env(sim: bool):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "models"), env.get("PYTHONPATH", "")])
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    if sim:
        env["NUMBA_ENABLE_CUDASIM"] = "1"  # must be set before numba.cuda is imported: hence a subprocess
    return env


def _run(args, sim, timeout=300):
    r = subprocess.run(
        [sys.executable, *args], env=_env(sim), cwd=ROOT, capture_output=True, text=True, timeout=timeout
    )
    return r


# The simulator half runs only the CUDA path: the CPU reference is computed in this process
# (cudasim_check.cpu_reference, which shares its compiled kernels with the rest of the session),
# so the subprocess compiles no CPU step kernel: 7-13 s warm, 22-33 s with a cold numba cache on a
# loaded 2-core machine (it was 3.5-7.5 min with the CPU half inside it).  A timeout FAILS the
# tests; PBSIM_CUDASIM_TIMEOUT overrides the limit (seconds).
SIM_TIMEOUT = float(os.environ.get("PBSIM_CUDASIM_TIMEOUT", "300"))
GPU_TIMEOUT = 600  # a real GPU build compiles every kernel with NVVM


def _results(sim, tmp_path):
    """``{check: error}`` from the device half, or a one-line reason it has none (a string)."""
    import importlib.util
    import traceback

    import numpy as np

    try:
        humanoid = pybullet_file("humanoid/humanoid.urdf")
    except pytest.skip.Exception:
        humanoid = ""
    ref = tmp_path / "cpu_reference.npz"
    try:
        spec = importlib.util.spec_from_file_location("_pbsim_cudasim_check", CHECK)
        check = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(check)
        np.savez(ref, **check.cpu_reference(humanoid))
    except Exception:  # noqa: BLE001 - reported by every test that needs the results
        return f"{CHECK.name}: cpu_reference failed in the test process:\n{traceback.format_exc()[-3000:]}"
    timeout = SIM_TIMEOUT if sim else GPU_TIMEOUT
    t0 = time.monotonic()
    try:
        r = _run([str(CHECK), str(ref)], sim, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        tail = "".join(x.decode(errors="replace") if isinstance(x, bytes) else (x or "") for x in (e.stdout, e.stderr))[
            -1500:
        ]
        return (
            f"{CHECK.name} ({'NUMBA_ENABLE_CUDASIM=1' if sim else 'real GPU'}) did not finish within "
            f"{timeout:g} s (PBSIM_CUDASIM_TIMEOUT)\noutput so far:\n{tail or '(none)'}"
        )
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")]
    if r.returncode != 0 or not lines:
        return (
            f"{CHECK.name} failed (exit {r.returncode}, {time.monotonic() - t0:.0f} s):\n"
            + r.stdout[-3000:]
            + r.stderr[-3000:]
        )
    return json.loads(lines[-1][len("RESULT ") :])


class _Outcome:
    """The module's one simulator run: its results, or why there are none.  Tests call
    :meth:`get`, so a timeout or a crash FAILS them (one full report, then one line each)
    instead of erroring every test in fixture setup."""

    def __init__(self, res):
        self.res, self.reported = res, False

    def get(self) -> dict:
        if isinstance(self.res, str):
            first = self.res.splitlines()[0]
            if self.reported:
                pytest.fail(f"{first} (full output in the first failing test of this module)", pytrace=False)
            self.reported = True
            pytest.fail(self.res, pytrace=False)
        return self.res


@pytest.fixture(scope="module")
def sim_outcome(tmp_path_factory):
    """The device half under the simulator, run once for the module (never raises)."""
    return _Outcome(_results(True, tmp_path_factory.mktemp("cudasim")))


def _real_gpu() -> bool:
    r = _run(["-c", "from pbsim.backends.cuda import available; print(available())"], sim=False, timeout=120)
    return r.stdout.strip().endswith("True")


TOOLKIT = """
from pbsim.backends.cuda import toolkit_missing
missing = toolkit_missing()
print("MISSING " + missing if missing else "TOOLKIT_OK")
"""


@functools.cache
def _toolkit_missing() -> str | None:
    """Why the real CUDA target cannot compile here (NVVM, NVRTC, libdevice), or None."""
    r = _run(["-c", TOOLKIT], sim=False, timeout=120)
    if "TOOLKIT_OK" in r.stdout:
        return None
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("MISSING ")]
    return lines[-1][len("MISSING ") :] if lines else f"probe failed: {(r.stdout + r.stderr)[-500:]}"


def test_twins_call_only_twins(sim_outcome):
    sim_results = sim_outcome.get()
    assert sim_results["twins/cpu_callees_left"] == 0


@pytest.mark.parametrize("alg", ["fk", "rnea", "crba", "aba"])
def test_dynamics_kernels_match_cpu_cudasim(sim_outcome, alg):
    """FK, RNEA, CRBA, ABA: CUDA twins == CPU kernels to 1e-12 (revolute, ball, free joints)."""
    sim_results = sim_outcome.get()
    got = {k: v for k, v in sim_results.items() if k.startswith(alg + "/")}
    assert {"chain3", "ballchain2", "swimmer"} <= {k.split("/")[1] for k in got}
    for k, err in got.items():
        assert err <= 1e-12, (k, err)


@pytest.mark.parametrize("integ", ["euler", "rk4"])
def test_integrators_match_cpu_cudasim(sim_outcome, integ):
    """3 steps, B = 3, torque and SPD control, AoS and SoA layouts: rel 1e-10."""
    sim_results = sim_outcome.get()
    got = {k: v for k, v in sim_results.items() if k.startswith(integ + "/")}
    assert len(got) == 8
    for k, err in got.items():
        assert err <= 1e-10, (k, err)


def test_rollout_cuda_matches_cpu_rollout(sim_outcome):
    sim_results = sim_outcome.get()
    assert sim_results["rollout/shape"] == 0
    assert sim_results["rollout/swimmer"] <= 1e-10


def test_per_launch_schedule(sim_outcome):
    """One-phase-per-launch scheduling gives the same step as the in-kernel loop and the CPU."""
    sim_results = sim_outcome.get()
    for k in ("schedule/launch", "schedule/kernel"):
        assert sim_results[k] <= 1e-12, (k, sim_results[k])


def test_plane_contact_matches_cpu_cudasim(sim_outcome):
    """euler + SPD + make_scene(ground="plane"), swimmer dropped on the plane, 3 steps, B = 2."""
    sim_results = sim_outcome.get()
    assert sim_results["contact/plane/effect"] > 1e-3  # the contact forces change the motion
    assert sim_results["contact/plane/swimmer"] <= 1e-10


@pytest.mark.parametrize("schedule", ["kernel", "launch"])
def test_pbad_lm_matches_cpu_cudasim(sim_outcome, schedule):
    """PBAD order 2 + LM (paper 000 Eq. 5), chain3, SPD, dt 0.05, 2 steps, B = 2: the in-kernel LM
    loop and one LM iteration per launch (Fig. 1) both equal the CPU pbad, iterations included."""
    sim_results = sim_outcome.get()
    assert sim_results["pbad/cpu_iterations"] >= 2  # LM really iterates
    assert sim_results[f"pbad/{schedule}"] <= 1e-10
    assert sim_results[f"pbad/{schedule}/iterations"] == 0


def test_pbad_through_rollout_device_cuda(sim_outcome):
    """pbsim.rollout(..., device="cuda", schedule="launch", max_iterations=20, hessian="gn")."""
    sim_results = sim_outcome.get()
    assert sim_results["pbad/rollout"] <= 1e-10


def test_divergence_is_reported_like_the_cpu_rollout(sim_outcome):
    """on_nan="stop" freezes and flags the same trajectory as the CPU; "raise" names it."""
    sim_results = sim_outcome.get()
    assert sim_results["nan/stop"] == 0
    assert sim_results["nan/raise"] == 0


def test_real_gpu_matches_cpu(tmp_path):
    if not _real_gpu():
        pytest.skip("no CUDA GPU here (the simulator tests cover the kernels)")
    missing = _toolkit_missing()
    if missing:
        pytest.skip(f"a CUDA GPU but no CUDA toolkit libraries to compile for it: {missing}")
    res = _results(False, tmp_path)
    if isinstance(res, str):
        pytest.fail(res, pytrace=False)
    for k, err in res.items():
        assert err <= 1e-10, (k, err)


NO_GPU = """
import sys
{block}
import pbsim, pbsim_models
from pbsim import rollout
try:
    rollout(pbsim_models.chain(3), "euler", dt=0.01, steps=2, device="cuda")
except pbsim.PbsimError as e:
    print("PBSIM_ERROR", type(e).__name__, e)
"""


def test_no_gpu_gives_clear_pbsim_error():
    if _real_gpu():
        pytest.skip("a CUDA GPU is present")
    r = _run(["-c", NO_GPU.format(block="")], sim=False, timeout=120)
    assert "PBSIM_ERROR DeviceError device='cuda' is not available" in r.stdout, r.stdout + r.stderr
    assert "Traceback" not in r.stderr


def test_no_numba_cuda_gives_install_hint():
    r = _run(["-c", NO_GPU.format(block="sys.modules['numba.cuda'] = None")], sim=False, timeout=120)
    assert "PBSIM_ERROR DeviceError" in r.stdout and "numba-cuda" in r.stdout, r.stdout + r.stderr


def test_unsupported_integrator_and_callable_control_are_input_errors():
    code = """
import pbsim, pbsim_models
from pbsim import rollout
m = pbsim_models.chain(2)
for kw in (dict(integrator="nope"), dict(integrator="euler", control=lambda t, s: pbsim.Control()),
           dict(integrator="euler", layout="xyz")):
    try:
        rollout(m, dt=0.01, steps=1, device="cuda", **kw)
    except pbsim.InputError as e:
        print("INPUT_ERROR", e)
"""
    r = _run(["-c", code], sim=True, timeout=120)
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("INPUT_ERROR")]
    assert len(lines) == 3, r.stdout + r.stderr
    assert "'nope'" in lines[0] and "callable" in lines[1] and "'xyz'" in lines[2]


PTX = """
import sys, pbsim_models
from pbsim.backends import cuda as pc
# (model, integrator, layout, phase): the default compiles one kernel (about 30 s on 2 cores: the
# whole step is inlined into ~7 M characters of PTX); PBSIM_PTX_ALL=1 compiles all of them.
# pbad step: PBAD Eq. 5 energy/gradient/Hessian, LM, Cholesky, Lie-group update, SPD terms;
# swimmer: free + revolute joints; soa: strided ('A' layout) arrays.  rk4: control/SPD through
# MABA, ABA, plane/penalty contact, dexp^-1.  pbad iterate: the per-launch LM phase.
CASES = [("swimmer", "pbad", "soa", "steps"), ("swimmer", "rk4", "soa", "steps"), ("chain3", "pbad", "aos", "iterate")]
try:
    for name, integ, lay, phase in CASES[:None if sys.argv[1] == "all" else 1]:
        m = pbsim_models.swimmer() if name == "swimmer" else pbsim_models.chain(3)
        p = pc.compile_ptx(m, integ, lay, cc=(9, 0), phase=phase)
        print("PTX_OK", name, integ, lay, phase, ".entry" in p and "sm_90" in p, len(p), flush=True)
except pc.DeviceError as e:
    print("NO_NVVM", e)
except Exception as e:  # a CUDA toolkit library missing at compile time (cuda.pathfinder, NVVM/NVRTC)
    if type(e).__name__.endswith(("NotFoundError", "SupportError")) or "pathfinder" in type(e).__module__:
        print("NO_NVVM", type(e).__name__, str(e).splitlines()[0])
    else:
        raise
"""


def test_real_cuda_target_compiles_to_ptx():
    """The twins type-check and compile for the real CUDA target (sm_90), without a GPU: only NVVM.
    One kernel by default (PBAD's in-kernel step); PBSIM_PTX_ALL=1 adds rk4 and the per-launch
    LM phase."""
    missing = _toolkit_missing()
    if missing:
        pytest.skip(f"no CUDA toolkit libraries for the real target: {missing}")
    every = os.environ.get("PBSIM_PTX_ALL", "0") not in ("", "0")
    r = _run(["-c", PTX, "all" if every else "one"], sim=False, timeout=600)
    if "NO_NVVM" in r.stdout:
        pytest.skip([ln for ln in r.stdout.splitlines() if ln.startswith("NO_NVVM")][-1])
    ok = [ln for ln in r.stdout.splitlines() if ln.startswith("PTX_OK")]
    assert len(ok) == (3 if every else 1) and all(" True " in ln for ln in ok), r.stdout[-2000:] + r.stderr[-3000:]


def test_compile_ptx_without_toolkit_is_a_device_error():
    """Where libnvvm/libnvrtc/libdevice are missing, compile_ptx says which, at once, as a
    DeviceError (not a DynamicLibNotFoundError from deep inside numba-cuda after compiling)."""
    code = """
import pbsim_models
from pbsim.backends import cuda as pc
missing = pc.toolkit_missing()
if missing is None:
    print("HAS_TOOLKIT")
else:
    try:
        pc.compile_ptx(pbsim_models.chain(2), "euler")
    except pc.DeviceError as e:
        print("DEVICE_ERROR", e)
"""
    r = _run(["-c", code], sim=False, timeout=300)
    if "HAS_TOOLKIT" in r.stdout:
        pytest.skip("the CUDA toolkit libraries are present (test_real_cuda_target_compiles_to_ptx covers it)")
    assert "DEVICE_ERROR the CUDA toolkit libraries are missing: lib" in r.stdout, r.stdout + r.stderr[-2000:]
    assert "Traceback" not in r.stderr


def test_kernels_call_no_numpy_ufunc():
    """No kernel calls a numpy function other than a dtype constructor (``np.int64(b)``):
    numba-cuda's real target has no ufunc table for them.  On an H200 (2026-11-26) ``np.sqrt``
    in ``pgm_project`` failed to compile for the device (``KeyError: <ufunc 'sqrt'>``) while the
    CUDA simulator, which runs the twins as Python, passed it; ``math.sqrt`` compiles on both."""
    import importlib
    import inspect
    import pkgutil
    import re

    import pbsim
    from pbsim.jit import build as K

    for mod in pkgutil.walk_packages(pbsim.__path__, "pbsim."):
        if not mod.name.endswith("__main__"):
            importlib.import_module(mod.name)
    dtypes = {"int64", "int32", "float64", "float32", "uint64", "bool_"}
    calls = re.compile(r"\bnp\.([A-Za-z_0-9]+)\s*\(")
    bad = []
    for f in list(K._PY_FUNCS.values()):
        for name in calls.findall(inspect.getsource(f)):
            if name not in dtypes:
                bad.append(f"{f.__module__}.{f.__qualname__}: np.{name}")
    assert len(K._PY_FUNCS) > 200 and not bad, bad
