"""Batched configuration-space group operations (kernels in joints.py)."""
from numba import prange

from pbsim.backends.kernel import kernel
from pbsim.dynamics.joints import difference_config, integrate_config


@kernel(parallel=True)
def integrate_batch(m, w, q, dv, out):
    for b in prange(q.shape[0]):
        integrate_config(m, q[b], dv[b], out[b], w.Rj[b])


@kernel(parallel=True)
def difference_batch(m, w, q0, q1, out):
    for b in prange(q0.shape[0]):
        difference_config(m, q0[b], q1[b], out[b], w.Rj[b])
