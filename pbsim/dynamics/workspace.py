"""Preallocated per-state scratch for the dynamics kernels (the kernels allocate nothing)."""
from __future__ import annotations

import weakref
from collections import namedtuple

import numpy as np

# Leading axis B everywhere: kernels for state b read and write index b only.
# mY, mK, mt: scratch of the mimic-joint coupling (pbsim.dynamics.mimic), sized by the number k
# of mimic joints (k = 0: empty, the kernels compile once either way)
DynWork = namedtuple("DynWork", "R p Rw pw vel acc c IA pA U Dinv u tmp vec Rj mY mK mt")


def make_work(model, batch: int) -> DynWork:
    nb = max(model.nb, 1)
    B = max(int(batch), 1)
    k = len(getattr(model, "mimic", ()))
    z = np.zeros
    return DynWork(
        R=z((B, nb, 3, 3)), p=z((B, nb, 3)),  # body pose in parent
        Rw=z((B, nb, 3, 3)), pw=z((B, nb, 3)),  # body pose in world
        vel=z((B, nb, 6)), acc=z((B, nb, 6)), c=z((B, nb, 6)),  # velocity, acceleration, bias v x vJ
        IA=z((B, nb, 6, 6)), pA=z((B, nb, 6)),  # articulated / composite inertia; bias or body force
        U=z((B, nb, 6, 6)), Dinv=z((B, nb, 6, 6)), u=z((B, nb, 6)),
        tmp=z((B, 2, 6, 6)), vec=z((B, 2, 6)), Rj=z((B, 3, 3)),
        mY=z((B, k, model.nv)), mK=z((B, k, k)), mt=z((B, max(model.nv, k))),
    )


_cache: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def work_for(model, batch: int) -> DynWork:
    """A workspace for ``batch`` states, reused across calls on the same model."""
    per_model = _cache.setdefault(model, {})
    w = per_model.get(batch)
    if w is None:
        if len(per_model) > 4:
            per_model.clear()
        w = per_model[batch] = make_work(model, batch)
    return w
