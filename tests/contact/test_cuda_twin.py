"""The contact kernels' CUDA twins (same source, ``numba.cuda.jit(device=True)``) equal the CPU
kernels: run in a subprocess under the CUDA simulator (NUMBA_ENABLE_CUDASIM=1)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest


def test_contact_cuda_twins_match_cpu_under_cudasim():
    pytest.importorskip("numba.cuda")
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    script = Path(__file__).with_name("_cudasim_check.py")
    r = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    diffs = {ln.split()[1]: (float(ln.split()[2]), float(ln.split()[3]))
             for ln in r.stdout.splitlines() if ln.startswith("DIFF")}
    assert set(diffs) == {"X", "d", "n", "dd_dv", "tau"}, r.stdout
    for name, (diff, scale) in diffs.items():
        assert diff <= 1e-12, (name, diff, scale)
