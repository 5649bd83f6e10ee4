"""PBFD as the contract's step kernel (:class:`pbsim.integrators.base.StepSpec`): one whole step of
one trajectory, solver loop included, run by the generic drivers (``Integrator.step``,
``CpuBatch``, ``CudaBatch`` through the kernel's CUDA twin).  The sub-step fallback of a stalled
step is the host's (:class:`pbsim.integrators.pbfd.Pbfd`); the batch drivers keep the kernel's
step and report it unconverged (``solver_info``); they run JTJ-LM (LBFGS: the integrator's step),
on the GPU also with one LM iteration per launch (``schedule="launch"``, paper 003 Fig. 3)."""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from pbsim.backends.kernel import kernel
from pbsim.dynamics.workspace import make_work
from pbsim.errors import InputError
from pbsim.integrators.base import StepSpec, body_contact_used
from pbsim.integrators.pbad.order2 import BODY_CONTACT, make_pbad_work, pbad2_finish, pbad2_prepare
from pbsim.integrators.pbfd.solve import (WINDOW, pbfd_converged, pbfd_lbfgs, pbfd_lm, pbfd_lm_launch_begin,
                                          pbfd_lm_launch_iterate)
from pbsim.optim.lm import lm_launch_end

# pm: PbfdModel (shared); pw: PbadWork (batched; order 2); V: (B, 4, nv) vectors of the QR solve /
# LBFGS; wf: second dynamics workspace (M(q_k)'s factor, LBFGS only); info: (B, 4) [iterations,
# |r|_inf, converged, GE]; method: 0 JTJ-LM, 1 LBFGS (informative: one kernel per optimizer)
# st: (B, 8) LM state between launches [lam, GE, |r|_inf, it, conv, stopped, GE_ref, -] (the GPU's
# per-launch schedule, as pbad's); done: (B,) 1.0 once a trajectory's solver has stopped
PbfdX = namedtuple("PbfdX", "pm pw V wf info st done maxit gtol xtol method")
BATCHED = ("pw", "V", "wf", "info", "st", "done")


def make_pbfd_x(integrator, B, lbfgs: bool) -> PbfdX:
    """The steps' ``x`` for ``B`` trajectories of a made pbfd (or pbd_friction) integrator
    (``lbfgs``: the LBFGS pair store and the second dynamics workspace)."""
    I = integrator
    model = I.model
    pw = make_pbad_work(model, I.pm, B, 2, lbfgs_m=8 if lbfgs else 1)
    z = np.zeros
    pw = pw._replace(J=z((B, 1, 1)))  # the unused 4th slot of the LM's work rows
    n = max(model.nv, 1)
    return PbfdX(I.pm, pw, z((B, 4, n)), make_work(model, B if lbfgs else 1), z((B, 4)), z((B, 8)), z(B),
                 int(I.maxit), float(I.gtol), float(I.xtol), 1 if lbfgs else 0)


def pbfd_extra(integrator, B) -> PbfdX:
    """The JTJ-LM step's ``x`` for ``B`` trajectories of a made ``pbfd`` integrator."""
    if integrator.optimizer != "lm":
        raise InputError("the batch drivers (CpuBatch, device='cuda') run pbfd with optimizer='lm' only "
                         "(LBFGS: use the integrator's step)")
    return make_pbfd_x(integrator, B, False)


def pbfd_lbfgs_extra(integrator, B) -> PbfdX:
    """The LBFGS step's ``x`` (the integrator's own step only)."""
    return make_pbfd_x(integrator, B, True)


@kernel
def pbfd_step(m, s, c, w, sw, x, b, q, v, dt, qn, vn):
    """One PBFD step of trajectory b by JTJ-LM: q_{k-1}, q_k poses and the guess q_k (+) dt v_k, the
    solve of r(q_{k+1}) = 0, v_{k+1} = (q_{k+1} (-) q_k) / dt."""
    pw = x.pw
    pbad2_prepare(m, s, w, pw, b, q, v, dt)
    pbfd_lm(m, s, x.pm, c, w, pw, x.V, b, q, v, dt, x.maxit, x.gtol, x.xtol, x.info[b])
    pbad2_finish(m, w, pw, b, q, dt, qn, vn)


@kernel
def pbfd_lbfgs_step(m, s, c, w, sw, x, b, q, v, dt, qn, vn):
    """:func:`pbfd_step` with LBFGS on GE."""
    pw = x.pw
    pbad2_prepare(m, s, w, pw, b, q, v, dt)
    pbfd_lbfgs(m, s, x.pm, c, w, x.wf, pw, x.V, b, q, v, dt, x.maxit, x.gtol, x.xtol, x.info[b])
    pbad2_finish(m, w, pw, b, q, dt, qn, vn)


# the per-launch schedule (paper 003 Fig. 3, Sec. V-A): one JTJ-LM iteration per launch across all
# trajectories, a trajectory whose solver has stopped skips its launches; the iteration kernel is
# the one pbfd_lm's loop runs (the same iterates as pbfd_step)

@kernel
def pbfd_begin(m, s, c, w, sw, x, b, q, v, dt, qn, vn):
    """Per-launch schedule, phase 1: poses of q_{k-1}, q_k, the guess, the LM state there."""
    pw = x.pw
    pbad2_prepare(m, s, w, pw, b, q, v, dt)
    pbfd_lm_launch_begin((m, s, x.pm, c, w, pw, q, v, dt, x.V), b, x.st[b])
    x.done[b] = 0.0


@kernel
def pbfd_iterate(m, s, c, w, sw, x, b, q, v, dt, qn, vn):
    """Per-launch schedule, phase 2: one JTJ-LM iteration (pbsim.optim.lm.lm_iterate with PBFD's hooks)."""
    pw = x.pw
    if pbfd_lm_launch_iterate((m, s, x.pm, c, w, pw, q, v, dt, x.V), (x.V[b], pw.M2[b], pw.L[b], pw.J[b], pw.dx[b]),
                              b, m.nv, x.st[b], x.maxit, x.gtol, x.xtol, 0.0, WINDOW):
        x.done[b] = 1.0


@kernel
def pbfd_end(m, s, c, w, sw, x, b, q, v, dt, qn, vn):
    """Per-launch schedule, phase 3: diagnostics (as pbfd_lm's) and (qn, vn)."""
    info = x.info[b]
    lm_launch_end(info, x.st[b], x.gtol)
    info[2] = 1.0 if pbfd_converged(info[1], info[2] > 0.5, x.gtol) else 0.0
    pbad2_finish(m, w, x.pw, b, q, dt, qn, vn)


# One step kernel per optimizer rather than one kernel with an optimizer switch built as
# Variants (pbad's way): Variants' copies of a kernel keep its qualified name, and two copies
# compiled in different processes can get the same symbol (name, types, numba's per-process
# counter), so a process that loads both from the disk cache runs one in place of the other
# (measured with pbad: `lm` then `lbfgs` in one process after each was compiled in its own, the
# second returned without iterating).  Separate kernels bound to the driver have names of their
# own.  The contact model is compiled into every build for the same reason.
# Contact between bodies is compiled only into runs whose scene has body-body items (copies with
# names of their own: pbsim.backends.kernel.Variants).
BODY = dict(features={"body_contact": BODY_CONTACT}, used=body_contact_used)
STEP = StepSpec(pbfd_step, extra=pbfd_extra, batched=BATCHED, info="info",
                per_launch=(pbfd_begin, pbfd_iterate, pbfd_end, None), done="done", **BODY)
STEP_LBFGS = StepSpec(pbfd_lbfgs_step, extra=pbfd_lbfgs_extra, batched=BATCHED, info="info", **BODY)
