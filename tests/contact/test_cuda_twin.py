"""The contact kernels' CUDA twins (same source, ``numba.cuda.jit(device=True)``) equal the CPU
kernels: the twins run in a subprocess under the CUDA simulator (NUMBA_ENABLE_CUDASIM=1), against
CPU outputs computed here (so the subprocess compiles no CPU kernel: ~3 s, not ~17 s cold)."""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

SCRIPT = Path(__file__).with_name("_cudasim_check.py")
TIMEOUT = 300  # the simulator run takes a few seconds; generous for a loaded 2-core machine


def test_contact_cuda_twins_match_cpu_under_cudasim(tmp_path):
    pytest.importorskip("numba.cuda")
    spec = importlib.util.spec_from_file_location("_pbsim_contact_cudasim_check", SCRIPT)
    check = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(check)
    ref = tmp_path / "contact_cpu.npz"
    np.savez(ref, **check.cpu_outputs())
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    try:
        r = subprocess.run(
            [sys.executable, str(SCRIPT), str(ref)], env=env, capture_output=True, text=True, timeout=TIMEOUT
        )
    except subprocess.TimeoutExpired as e:
        out = "".join(x.decode(errors="replace") if isinstance(x, bytes) else (x or "") for x in (e.stdout, e.stderr))
        pytest.fail(
            f"{SCRIPT.name} under NUMBA_ENABLE_CUDASIM=1 did not finish within {TIMEOUT} s; "
            f"output so far:\n{out[-1500:]}",
            pytrace=False,
        )
    assert r.returncode == 0, r.stdout + r.stderr
    diffs = {
        ln.split()[1]: (float(ln.split()[2]), float(ln.split()[3]))
        for ln in r.stdout.splitlines()
        if ln.startswith("DIFF")
    }
    assert set(diffs) == {"X", "d", "n", "dd_dv", "tau"}, r.stdout
    for name, (diff, scale) in diffs.items():
        assert diff <= 1e-12, (name, diff, scale)
