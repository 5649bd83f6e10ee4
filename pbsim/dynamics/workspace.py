"""Preallocated per-state scratch for the dynamics kernels (the kernels allocate nothing)."""
from __future__ import annotations

import weakref
from collections import namedtuple

import numpy as np

# Leading axis B everywhere: kernels for state b read and write index b only.
# mY, mK, mt: scratch of the mimic-joint coupling (pbsim.dynamics.mimic), sized by the number k
# of mimic joints (k = 0: empty, the kernels compile once either way)
# eJ, eY, eK, er, ea, el, ed, edq, eq, et: scratch of the equality constraints (pbsim.dynamics.equality),
# sized by their rows K: Jacobian, A^-1 J^T (nv, K), J A^-1 J^T (its factor), residual, bias, multipliers,
# dropped rows, a tangent step, a configuration and a target phi (equality_second_order_correction); eS, eU, ez, eP: every DOF's S and U = I^A S in
# world coordinates, the rows that are identically zero, the (6, K) forces/accelerations per body
# of the responses' sweep and the indices of its rows (pbsim.dynamics.delassus; sized for the larger
# of the equality and the limit rows)
# lJ, lY, lH, lL, lc, lf, lR, la, ld, lb: scratch of MuJoCo's limit constraint and tendon armature
# (pbsim.dynamics.limits), sized by their rows: Jacobian, A^-1 J^T, J A^-1 J^T + R, the factor of
# its active block, right-hand side, forces, regularizer, active set, dropped pivots, bilateral rows
DynWork = namedtuple("DynWork", "R p Rw pw vel acc c IA pA U Dinv u tmp vec Rj mY mK mt eJ eY eK er ea el ed edq eq "
                     "et eS eU ez eP ei lJ lY lH lL lc lf lR la ld lb")


def make_work(model, batch: int) -> DynWork:
    nb = max(model.nb, 1)
    B = max(int(batch), 1)
    k = len(getattr(model, "mimic", ()))
    ke = int(getattr(model, "neq_rows", 0))
    kl = limit_rows_max(model)
    kr = max(ke, kl)  # rows of the responses' sweep
    z = np.zeros
    return DynWork(
        R=z((B, nb, 3, 3)), p=z((B, nb, 3)),  # body pose in parent
        Rw=z((B, nb, 3, 3)), pw=z((B, nb, 3)),  # body pose in world
        vel=z((B, nb, 6)), acc=z((B, nb, 6)), c=z((B, nb, 6)),  # velocity, acceleration, bias v x vJ
        IA=z((B, nb, 6, 6)), pA=z((B, nb, 6)),  # articulated / composite inertia; bias or body force
        U=z((B, nb, 6, 6)), Dinv=z((B, nb, 6, 6)), u=z((B, nb, 6)),
        tmp=z((B, 2, 6, 6)), vec=z((B, 2, 6)), Rj=z((B, 3, 3)),
        mY=z((B, k, model.nv)), mK=z((B, k, k)), mt=z((B, max(model.nv, k))),
        eJ=z((B, ke, model.nv)), eY=z((B, model.nv, ke)), eK=z((B, ke, ke)), er=z((B, ke)), ea=z((B, ke)),
        el=z((B, ke)), ed=z((B, ke)), edq=z((B, model.nv if ke else 0)), eq=z((B, model.nq if ke else 0)),
        et=z((B, ke)),
        eS=z((B, model.nv if kr else 0, 6)), eU=z((B, model.nv if kr else 0, 6)), ez=z((B, kr)), eP=z((B, nb, 6, kr)),
        ei=z((B, kr), np.int64),
        lJ=z((B, kl, model.nv)), lY=z((B, model.nv, kl)), lH=z((B, kl, kl)), lL=z((B, kl, kl)), lc=z((B, kl)),
        lf=z((B, kl)), lR=z((B, kl)), la=z((B, kl)), ld=z((B, kl)), lb=z((B, kl)),
    )


def limit_rows_max(model) -> int:
    """Rows of MuJoCo's limit constraint a state can have (``SoftLimits.rows_max``) and one per
    tendon with armature (pbsim.dynamics.limits); 0 with mimic joints (Model._limit_fields)."""
    if getattr(model, "mimic", None):
        return 0
    lim = getattr(model, "soft_limits", None)
    ten = getattr(model, "tendons", None)
    return (0 if lim is None else lim.rows_max()) + (0 if ten is None else int((ten.armature > 0).sum()))


_cache: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def work_for(model, batch: int) -> DynWork:
    """A workspace for ``batch`` states, reused across calls on the same model."""
    per_model = _cache.setdefault(model, {})
    w = per_model.get(batch)
    if w is not None and (w.eJ.shape[1] != int(getattr(model, "neq_rows", 0))
                          or w.lJ.shape[1] != limit_rows_max(model)):  # equality or limits set after it was made
        w = None
    if w is None:
        if len(per_model) > 4:
            per_model.clear()
        w = per_model[batch] = make_work(model, batch)
    return w
