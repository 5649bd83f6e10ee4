"""The CUDA backend: same kernels as the CPU (run by numba's simulator here, on a GPU when
there is one), and a clear pbsim error when there is no GPU."""
from __future__ import annotations

import json
import os
import subprocess
import sys
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
    r = subprocess.run([sys.executable, *args], env=_env(sim), cwd=ROOT, capture_output=True, text=True,
                       timeout=timeout)
    return r


def _results(sim):
    try:
        humanoid = pybullet_file("humanoid/humanoid.urdf")
    except pytest.skip.Exception:
        humanoid = ""
    r = _run([str(CHECK), humanoid], sim)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    line = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT "):])


@pytest.fixture(scope="module")
def sim_results():
    return _results(sim=True)


def _real_gpu() -> bool:
    r = _run(["-c", "from pbsim.backends.cuda import available; print(available())"], sim=False, timeout=120)
    return r.stdout.strip().endswith("True")


def test_twins_call_only_twins(sim_results):
    assert sim_results["twins/cpu_callees_left"] == 0


@pytest.mark.parametrize("alg", ["fk", "rnea", "crba", "aba"])
def test_dynamics_kernels_match_cpu_cudasim(sim_results, alg):
    """FK, RNEA, CRBA, ABA: CUDA twins == CPU kernels to 1e-12 (revolute, ball, free joints)."""
    got = {k: v for k, v in sim_results.items() if k.startswith(alg + "/")}
    assert {"chain3", "ballchain2", "swimmer"} <= {k.split("/")[1] for k in got}
    for k, err in got.items():
        assert err <= 1e-12, (k, err)


@pytest.mark.parametrize("integ", ["euler", "rk4"])
def test_integrators_match_cpu_cudasim(sim_results, integ):
    """3 steps, B = 3, torque and SPD control, AoS and SoA layouts: rel 1e-10."""
    got = {k: v for k, v in sim_results.items() if k.startswith(integ + "/")}
    assert len(got) == 8
    for k, err in got.items():
        assert err <= 1e-10, (k, err)


def test_rollout_cuda_matches_cpu_rollout(sim_results):
    assert sim_results["rollout/shape"] == 0
    assert sim_results["rollout/swimmer"] <= 1e-10


def test_per_launch_schedule(sim_results):
    """One-phase-per-launch scheduling gives the same step as the in-kernel loop and the CPU."""
    for k in ("schedule/launch", "schedule/kernel"):
        assert sim_results[k] <= 1e-12, (k, sim_results[k])


def test_plane_contact_matches_cpu_cudasim(sim_results):
    """euler + SPD + make_scene(ground="plane"), swimmer dropped on the plane, 3 steps, B = 2."""
    assert sim_results["contact/plane/effect"] > 1e-3  # the contact forces change the motion
    assert sim_results["contact/plane/swimmer"] <= 1e-10


@pytest.mark.parametrize("schedule", ["kernel", "launch"])
def test_pbad_lm_matches_cpu_cudasim(sim_results, schedule):
    """PBAD order 2 + LM (paper 000 Eq. 5), chain3, SPD, dt 0.05, 2 steps, B = 2: the in-kernel LM
    loop and one LM iteration per launch (Fig. 1) both equal the CPU pbad, iterations included."""
    assert sim_results["pbad/cpu_iterations"] >= 2  # LM really iterates
    assert sim_results[f"pbad/{schedule}"] <= 1e-10
    assert sim_results[f"pbad/{schedule}/iterations"] == 0


def test_pbad_through_rollout_device_cuda(sim_results):
    """pbsim.rollout(..., device="cuda", schedule="launch", max_iterations=20, hessian="gn")."""
    assert sim_results["pbad/rollout"] <= 1e-10


def test_divergence_is_reported_like_the_cpu_rollout(sim_results):
    """on_nan="stop" freezes and flags the same trajectory as the CPU; "raise" names it."""
    assert sim_results["nan/stop"] == 0
    assert sim_results["nan/raise"] == 0


def test_real_gpu_matches_cpu():
    if not _real_gpu():
        pytest.skip("no CUDA GPU here (the simulator tests cover the kernels)")
    res = _results(sim=False)
    for k, err in res.items():
        assert err <= 1e-10, (k, err)


NO_GPU = """
import sys
{block}
import pbsim, pbsim_models
from pbsim.rollout_gpu import rollout
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
from pbsim.rollout_gpu import rollout
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
"""


def test_real_cuda_target_compiles_to_ptx():
    """The twins type-check and compile for the real CUDA target (sm_90), without a GPU: only NVVM.
    One kernel by default (PBAD's in-kernel step); PBSIM_PTX_ALL=1 adds rk4 and the per-launch
    LM phase."""
    every = os.environ.get("PBSIM_PTX_ALL", "0") not in ("", "0")
    r = _run(["-c", PTX, "all" if every else "one"], sim=False, timeout=600)
    if "NO_NVVM" in r.stdout:
        pytest.skip(r.stdout.strip())
    ok = [ln for ln in r.stdout.splitlines() if ln.startswith("PTX_OK")]
    assert len(ok) == (3 if every else 1) and all(" True " in ln for ln in ok), r.stdout[-2000:] + r.stderr[-3000:]
