"""pbd_friction's step kernels: PBAD's and PBFD's, with the contact swapped, nothing copied.

- ``lm`` (LM on the energy with its exact Hessian, PBAD's solver): PBAD order 2's step kernel
  and its per-launch phases (:mod:`pbsim.integrators.pbad.step`) specialised
  (:func:`pbsim.jit.specialize`) with ``pbad2_eval`` -> PBFD's objective
  (:func:`pbsim.integrators.pbfd.residual.pbfd_objective`, which with ``PbfdModel.energy`` is
  Eq. 6 with Eq. 9 + Eq. 11's contact: E, its true gradient and Hessian) and PBAD's contact step
  filter landing entering points at PBFD's fraction of their predicted depth (alpha = 2's normal
  stiffness vanishes at d = 0; PBAD's Eq. 9 lands them just inside).
- ``jtj`` (JTJ-LM on ``|grad E|^2 / 2``, PBFD's solver): PBFD's own step kernel, unchanged: its
  residual with the energy-form contact *is* ``grad E``.
- ``lbfgs`` (LBFGS on E, PBAD's preconditioned loop): PBAD order 2's LBFGS specialised likewise,
  with PBFD's limit on each direction (landing fraction, trust cap).
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from collections import namedtuple

from pbsim.jit import kernel, specialize
from pbsim.errors import InputError
from pbsim.integrators.base import StepSpec
from pbsim.integrators.pbad.energy import contact_step_limit
from pbsim.integrators.pbad.pairs import pair_step_limit
from pbsim.integrators.pbad.order2 import make_pbad_work, pbad2_finish, pbad2_lbfgs, pbad2_prepare
from pbsim.integrators.pbad.step import BATCHED as PBAD_BATCHED
from pbsim.integrators.pbad.step import PbadX, pbad_begin, pbad_end, pbad_iterate, pbad_step
from pbsim.integrators.pbfd.residual import pbfd_objective
from pbsim.integrators.pbfd.solve import STEP_FRAC, lbfgs_trust
from pbsim.integrators.pbfd.step import BODY
from pbsim.integrators.pbfd.step import STEP as PBFD_STEP
from pbsim.integrators.pbfd.step import make_pbfd_x
from pbsim.optim.substep import substep_step


@kernel
def landing_limit(m, s, T, xi, dx, frac):
    """PBAD's contact step filter (:func:`~pbsim.integrators.pbad.energy.contact_step_limit`) at
    PBFD's landing fraction, whatever ``frac`` PBAD asks for."""
    return contact_step_limit(m, s, T, xi, dx, STEP_FRAC)


@kernel
def pair_landing_limit(m, s, T, xi, dx, frac):
    """:func:`landing_limit` between bodies (:func:`~pbsim.integrators.pbad.pairs.pair_step_limit`)."""
    return pair_step_limit(m, s, T, xi, dx, STEP_FRAC)


@kernel
def pbd_lbfgs_limit(P, b, slope):
    """LBFGS hook (PBAD's loop has none): PBFD's landing limit and trust cap on the direction
    (:func:`~pbsim.integrators.pbfd.solve.lbfgs_trust`; without it LBFGS sent the falling chain
    of scripts/figures/fig_pbfd_optimizers.py 4e4 m away)."""
    m, s, pm, c, w, wf, pw, q, v, dt = P
    return lbfgs_trust(m, s, pw, b, slope)


PBD = dict(pbad2_eval=pbfd_objective, contact_step_limit=landing_limit, pair_step_limit=pair_landing_limit,
           lbfgs_limit=pbd_lbfgs_limit)
pbd_lm_step = specialize(pbad_step, "pbd_friction", **PBD)
pbd_begin = specialize(pbad_begin, "pbd_friction", **PBD)
pbd_iterate = specialize(pbad_iterate, "pbd_friction", **PBD)
pbd_end = specialize(pbad_end, "pbd_friction", **PBD)
pbd_lbfgs = specialize(pbad2_lbfgs, "pbd_friction", **PBD)


@kernel
def pbd_lbfgs_attempt(m, s, c, w, sw, x, b, q, v, dt, qn, vn):
    """One step by LBFGS on E (PBAD's loop on the energy form): poses, the solve, (qn, vn)."""
    pw = x.pw
    pbad2_prepare(m, s, w, pw, b, q, v, dt)
    pbd_lbfgs(m, s, x.pm, c, w, x.wf, pw, b, q, v, dt, x.maxit, x.gtol, x.xtol, x.info[b])
    pbad2_finish(m, w, pw, b, q, dt, qn, vn)


# the contract's step kernels: each attempt with the sub-step fallback of a stalled step inside
# (pbsim.optim.substep.substep_step), as pbfd's; kernels of their own names (see pbfd.step)
pbd_lm_substep = specialize(substep_step, "pbd_lm_step", _attempt=pbd_lm_step)
pbd_lbfgs_substep = specialize(substep_step, "pbd_lbfgs_step", _attempt=pbd_lbfgs_attempt)


@kernel
def pbd_friction_lm_step(m, s, c, w, sw, x, b, q, v, dt, qn, vn):
    """One step by LM on E (PBAD's step on the energy form) with the sub-step fallback."""
    pbd_lm_substep(m, s, c, w, sw, x, b, q, v, dt, qn, vn)


@kernel
def pbd_lbfgs_step(m, s, c, w, sw, x, b, q, v, dt, qn, vn):
    """One step by LBFGS on E (:func:`pbd_lbfgs_attempt`) with the sub-step fallback."""
    pbd_lbfgs_substep(m, s, c, w, sw, x, b, q, v, dt, qn, vn)

# PBAD's step scratch + the fallback's (pbsim.integrators.pbfd.step.PbfdX's qs, vs, levels, fbn)
PbdX = namedtuple("PbdX", PbadX._fields + ("qs", "vs", "levels", "fbn"))


def _batch_only(integrator, opt):
    if integrator.optimizer != opt:
        raise InputError("the batch drivers (CpuBatch, device='cuda') run pbd_friction with optimizer='lm' only "
                         "(jtj, lbfgs: use the integrator's step)")


def pbd_lm_extra(integrator, B, check=True) -> PbdX:
    """PBAD's step ``x`` for ``B`` trajectories of a made pbd_friction integrator (LM on E), with
    the fallback's scratch (info: 5 columns)."""
    I = integrator
    if check:
        _batch_only(I, "lm")
    pw = make_pbad_work(I.model, I.pm, B, 2, lbfgs_m=1)
    z = np.zeros
    pw = pw._replace(J=z((B, 1, 1)))
    info = z((B, 5))
    info[:, 4] = 1.0
    return PbdX(I.pm, pw, z((B, 8)), info, z(B), int(I.maxit), float(I.gtol), float(I.xtol), I.hessian == "exact",
                z((B, I.model.nq)), z((B, I.model.nv)), int(I.substeps_on_failure), z(B))


STEP_LM = StepSpec(pbd_friction_lm_step, extra=pbd_lm_extra, batched=PBAD_BATCHED + ("qs", "vs", "fbn"), info="info",
                   per_launch=(pbd_begin, pbd_iterate, pbd_end, None), done="done", fallback="levels", **BODY)
STEP_JTJ = replace(PBFD_STEP, extra=lambda I, B: make_pbfd_x(I, B, False))
STEP_LBFGS = StepSpec(pbd_lbfgs_step, extra=lambda I, B: make_pbfd_x(I, B, True), batched=PBFD_STEP.batched,
                      info="info", fallback="levels", **BODY)

