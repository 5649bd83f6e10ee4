"""Every registered integrator on ``device="cuda"`` under numba's CUDA simulator: one step of a
tiny batch through ``CudaBatch``, or an InputError that names the method (no step kernel, or
refused by ``pbsim.backends.cuda.CUDA_REFUSED``).  Run as a script in a process where
``NUMBA_ENABLE_CUDASIM=1`` was set before numba.cuda was imported; prints one line per method,
``METHOD name ok|refused|FAIL detail``, then ``CHUNKED ...`` for a rollout split in chunks.

    NUMBA_ENABLE_CUDASIM=1 python tests/backends/cudasim_methods.py [name,name,...]
"""

import os
import sys
import time
import traceback

import numpy as np

import pbsim
import pbsim_models
from pbsim.backends import cuda as pc
from pbsim.integrators import available


def step_one(name, m):
    g = pc.CudaBatch(m, name, batch=1, layout="aos")
    q0 = m.neutral()[None] + 0.1
    v0 = np.full((1, m.nv), 0.2)
    g.set_state(q0, v0)
    g.advance(1, 0.01)
    q, v, e = g.record()
    if not (np.isfinite(q).all() and np.isfinite(v).all()):
        return "FAIL", "non-finite state after one step"
    if np.array_equal(q, q0) and np.array_equal(v, v0):
        return "FAIL", "the step changed nothing"
    return "ok", f"|dq| {np.abs(q - q0).max():.3g}"


def main():
    assert pc.simulated(), "set NUMBA_ENABLE_CUDASIM=1 before running this script"
    names = sys.argv[1].split(",") if len(sys.argv) > 1 and sys.argv[1] else available()
    m = pbsim_models.chain(2)
    for name in names:
        t0 = time.perf_counter()
        try:
            status, detail = step_one(name, m)
        except pbsim.InputError as e:
            status, detail = ("refused" if repr(name) in str(e) else "FAIL"), str(e).splitlines()[0][:200]
        except Exception as e:  # noqa: BLE001 - reported, the test fails on it
            status = "FAIL"
            detail = (
                f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''} | "
                + " <- ".join(
                    ln.strip() for ln in traceback.format_exc().splitlines()[-6:-1] if ln.strip().startswith("File")
                )[-400:]
            )
        print(f"METHOD {name} {status} {time.perf_counter() - t0:.1f}s {detail}", flush=True)
    # a rollout whose batch does not fit "device memory" runs in chunks, with the same result
    per, shared = pc.memory_estimate(m, "euler")
    q0 = np.tile(m.neutral(), (5, 1)) + np.linspace(0, 0.3, 5)[:, None]
    ref = pbsim.rollout(m, "euler", dt=0.01, steps=2, q0=q0, device="cuda")
    os.environ["PBSIM_CUDA_FREE_BYTES"] = str(int((shared + 3.5 * per) / (1 - pc.MEMORY_RESERVE)))
    got = pbsim.rollout(m, "euler", dt=0.01, steps=2, q0=q0, device="cuda")
    print("CHUNKED", got.info.get("chunks"), float(np.abs(got.q - ref.q).max()), flush=True)


if __name__ == "__main__":
    main()
