"""PBAD order 2 with Levenberg-Marquardt (paper 000 Eq. 5, Sec. 5) as the contract's step kernel
(:class:`pbsim.integrators.base.StepSpec`), run by the generic CPU batch and GPU drivers.

Two schedules of the same per-trajectory LM (the kernels of :mod:`.order2`):

- ``pbad_step`` ("kernel" schedule): one thread runs a whole step, LM loop included
  (``pbad2_prepare`` + ``pbad2_lm``), like the CPU ``pbad`` integrator.
- ``pbad_begin`` / ``pbad_iterate`` / ``pbad_end`` ("launch" schedule, paper 000 Fig. 1): one
  LM iteration per launch across all trajectories; the LM state of each trajectory (lambda,
  E, |g|, iteration count, flags) lives in ``x.st`` between launches and converged trajectories
  skip their iterations.  ``pbad_iterate`` calls the iteration kernel that ``pbad2_lm``'s loop
  calls (:func:`pbsim.optim.lm.lm_iterate`, bound to Eq. 5's hooks), so both schedules give the
  same iterates as the CPU (bit for bit under the simulator).

Only order 2 with LM; LBFGS and orders 3/4 run through the integrator's own ``step`` (CPU).
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from pbsim.jit import kernel
from pbsim.dynamics.equality import PENALTY_FEATURE
from pbsim.errors import InputError
from pbsim.integrators.base import StepSpec, contact_equality_used
from pbsim.integrators.pbad.order2 import (BODY_CONTACT, LM_RTOL, make_pbad_work, pbad2_finish, pbad2_lm, pbad2_lm_launch_begin,
                                           pbad2_lm_launch_iterate, pbad2_prepare)
from pbsim.optim.lm import lm_launch_end

# pm: PbadModel (shared); pw: PbadWork (batched); st: (B, 8) LM state [lam, E, gn, it, conv, done,
# E_ref, -] (pbsim.optim.lm.lm_launch_*'s); info: (B, 4) [iterations, |g|_inf, converged, E] like the CPU integrator's; done: (B,)
# 1.0 once a trajectory's LM has stopped (the host polls it to stop launching iterations).
PbadX = namedtuple("PbadX", "pm pw st info done maxit gtol xtol exact_h")
BATCHED = ("pw", "st", "info", "done")


def pbad_extra(integrator, B) -> PbadX:
    """The step's ``x`` for ``B`` trajectories of a made ``pbad`` integrator (options checked by make())."""
    I = integrator
    if I.optimizer != "lm":
        raise InputError("the batch drivers (CpuBatch, device='cuda') run pbad with optimizer='lm' only "
                         "(LBFGS: use the integrator's step)")
    if I.substeps_on_failure:
        raise InputError("the batch drivers (CpuBatch, device='cuda') run pbad without the substep-on-failure "
                         "fallback (substep=0)")
    if I.points_contact_override:
        raise InputError("the batch drivers (CpuBatch, device='cuda') take pbad's contact from their scene: give the "
                         "plane and contact points as a scene (pbsim.make_scene / pbsim.Scene) instead of "
                         "points=dict(contact=...) (that is for the integrator's step)")
    pw = make_pbad_work(I.model, I.pm, B, 2, lbfgs_m=1)
    z = np.zeros
    pw = pw._replace(J=z((B, 1, 1)), S=z((B, 1, 1)), Y=z((B, 1, 1)), rho=z((B, 1)), alpha=z((B, 1)),
                     r=z((B, 1)), rt=z((B, 1)))  # unused by order-2 LM: keep device memory small
    return PbadX(I.pm, pw, z((B, 8)), z((B, 4)), z(B), int(I.maxit), float(I.gtol), float(I.xtol),
                 bool(I.hessian == "exact"))


@kernel
def pbad_step(m, s, c, w, sw, x, b, q, v, dt, qn, vn):
    """One whole PBAD step, the LM loop inside (in-kernel schedule)."""
    pbad2_prepare(m, s, w, x.pw, b, q, v, dt)
    pbad2_lm(m, s, x.pm, c, w, x.pw, b, q, v, dt, x.maxit, x.gtol, x.xtol, x.exact_h, x.info[b])
    pbad2_finish(m, w, x.pw, b, q, dt, qn, vn)


@kernel
def pbad_begin(m, s, c, w, sw, x, b, q, v, dt, qn, vn):
    """Per-launch schedule, phase 1: poses of q_{k-1}, q_k, initial guess, the LM state there."""
    pw = x.pw
    pbad2_prepare(m, s, w, pw, b, q, v, dt)
    pbad2_lm_launch_begin((m, s, x.pm, c, w, pw, q, v, dt, x.exact_h), b, x.st[b])
    x.done[b] = 0.0


@kernel
def pbad_iterate(m, s, c, w, sw, x, b, q, v, dt, qn, vn):
    """Per-launch schedule, phase 2: one LM iteration, the kernel that pbad2_lm's loop runs."""
    pw = x.pw
    if pbad2_lm_launch_iterate((m, s, x.pm, c, w, pw, q, v, dt, x.exact_h),
                               (pw.g[b], pw.H[b], pw.M2[b], pw.L[b], pw.dx[b]), b, m.nv, x.st[b], x.maxit, x.gtol,
                               x.xtol, LM_RTOL, 0):
        x.done[b] = 1.0


@kernel
def pbad_end(m, s, c, w, sw, x, b, q, v, dt, qn, vn):
    """Per-launch schedule, phase 3: diagnostics (as pbad2_lm's) and (qn, vn)."""
    lm_launch_end(x.info[b], x.st[b], x.gtol)
    pbad2_finish(m, w, x.pw, b, q, dt, qn, vn)


# order-2 LM as the contract's step, with both GPU schedules
STEP = StepSpec(pbad_step, extra=pbad_extra, batched=BATCHED, info="info",
                features={"body_contact": BODY_CONTACT, "equality": PENALTY_FEATURE}, used=contact_equality_used,
                per_launch=(pbad_begin, pbad_iterate, pbad_end, None), done="done")
