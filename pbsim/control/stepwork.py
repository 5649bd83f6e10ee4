"""Per-step scratch of the explicit step kernels (``sw``): the control solvers (SPD/MABA, DF/SF,
clamping) and the integrators write into it, so it lives here, below both (re-exported by
:mod:`pbsim.integrators.explicit.forces`; every method's step kernel receives it)."""
from collections import namedtuple

import numpy as np

# Scratch for the explicit integrators (leading axis B).
# qs: nq scratch for the SPD prediction q (+) dt v; tc/kc: the control's own torque and Kd dt
# (for clamping and logging); Md, hv, zv: mass matrix, bias and a zero row for the DF/SF solvers.
StepWork = namedtuple("StepWork", "qa va tau arm dq dqs kq kv qs tc kc Md hv zv")


def make_step_work(model, batch: int, stages: int = 4, dense: bool | None = None) -> StepWork:
    """Scratch for ``batch`` states.  ``dense``: allocate the (B, nv, nv) matrix the DF/SF SPD
    solvers need (None: only when it takes <= 64 MiB; without it DF/SF fall back to MABA)."""
    B, nq, nv = max(batch, 1), model.nq, model.nv
    z = np.zeros
    if dense is None:
        dense = B * nv * nv * 8 <= 64 * 2 ** 20
    nd = nv if dense else 1
    return StepWork(z((B, nq)), z((B, nv)), z((B, nv)), z((B, nv)), z((B, nv)), z((B, nv)),
                    z((B, stages, nv)), z((B, stages, nv)), z((B, nq)), z((B, nv)), z((B, nv)),
                    z((B, nd, nd)), z((B, nv)), z((B, nv)))
