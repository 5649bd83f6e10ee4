"""PBFD as the contract's step kernel (:class:`pbsim.integrators.base.StepSpec`): one whole step of
one trajectory, solver loop included, run by the generic drivers (``Integrator.step``,
``CpuBatch``, ``CudaBatch`` through the kernel's CUDA twin).  The sub-step fallback of a stalled
step is the host's (:class:`pbsim.integrators.pbfd.Pbfd`); the batch drivers keep the kernel's
step and report it unconverged (``solver_info``)."""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from pbsim.backends.kernel import kernel, unused, unused_float
from pbsim.dynamics.workspace import make_work
from pbsim.integrators.base import StepSpec
from pbsim.integrators.pbad.order2 import make_pbad_work, pbad2_finish, pbad2_prepare
from pbsim.integrators.pbfd.solve import pbfd_lbfgs, pbfd_lm

# pm: PbfdModel (shared); pw: PbadWork (batched; order 2); V: (B, 4, nv) vectors of the QR solve /
# LBFGS; wf: second dynamics workspace (M(q_k)'s factor, LBFGS only); info: (B, 4) [iterations,
# |r|_inf, converged, GE]; method: 0 JTJ-LM, 1 LBFGS
PbfdX = namedtuple("PbfdX", "pm pw V wf info maxit gtol xtol method")
BATCHED = ("pw", "V", "wf", "info")


def pbfd_extra(integrator, B) -> PbfdX:
    """The step's ``x`` for ``B`` trajectories of a made ``pbfd`` integrator."""
    I = integrator
    model = I.model
    lbfgs = I.optimizer == "lbfgs"
    pw = make_pbad_work(model, I.pm, B, 2, lbfgs_m=8 if lbfgs else 1)
    z = np.zeros
    pw = pw._replace(J=z((B, 1, 1)))  # the unused 4th slot of the LM's work rows
    n = max(model.nv, 1)
    return PbfdX(I.pm, pw, z((B, 4, n)), make_work(model, B if lbfgs else 1), z((B, 4)), int(I.maxit),
                 float(I.gtol), float(I.xtol), 1 if lbfgs else 0)


@kernel
def pbfd_step(m, s, c, w, sw, x, b, q, v, dt, qn, vn):
    """One PBFD step of trajectory b: q_{k-1}, q_k poses and the guess q_k (+) dt v_k, the solve of
    r(q_{k+1}) = 0 (JTJ-LM or LBFGS on GE), v_{k+1} = (q_{k+1} (-) q_k) / dt."""
    pw = x.pw
    pbad2_prepare(m, w, pw, b, q, v, dt)
    if x.method == 0:
        pbfd_lm(m, s, x.pm, c, w, pw, x.V, b, q, v, dt, x.maxit, x.gtol, x.xtol, x.info[b])
    else:
        pbfd_lbfgs(m, s, x.pm, c, w, x.wf, pw, x.V, b, q, v, dt, x.maxit, x.gtol, x.xtol, x.info[b])
    pbad2_finish(m, w, pw, b, q, dt, qn, vn)


# Compiled only when used (pbsim.backends.kernel.Variants): each optimizer, and the contact
# model when the scene has contact points; PBAD's drag points are never used by PBFD.
FEATURES = {
    "lm": ("pbfd_lm",),
    "lbfgs": ("pbfd_lbfgs",),
    "contact": {"contact_terms": unused_float, "contact_hessian": unused, "contact_step_limit": unused_float},
    "points": {"point_terms": unused_float, "point_hessian": unused},
}


def pbfd_used(integrator, kc, ks) -> dict:
    lbfgs = integrator.optimizer == "lbfgs"
    return dict(lm=not lbfgs, lbfgs=lbfgs, contact=ks.npts > 0, points=False)


STEP = StepSpec(pbfd_step, extra=pbfd_extra, batched=BATCHED, info="info", features=FEATURES, used=pbfd_used)
