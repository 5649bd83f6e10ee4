"""PBFD as the contract's step kernel (:class:`pbsim.integrators.base.StepSpec`): one whole step of
one trajectory, solver loop included, run by the generic drivers (``Integrator.step``, rollout's
compiled loop, ``CpuBatch``, ``CudaBatch`` through the kernel's CUDA twin, the vector env).  The
sub-step fallback of a stalled step is inside the kernel (:func:`pbsim.optim.substep.substep_step`:
two halves, recursively, up to ``substep`` levels, counted in ``info[b, 4]`` and ``fbn``), so
every driver gives the same step; the batch drivers run JTJ-LM (LBFGS: the integrator's step),
on the GPU also with one LM iteration per launch (``schedule="launch"``, paper 003 Fig. 3), which
has no fallback and is refused unless ``substep=0``."""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from pbsim.jit import kernel, specialize, unused
from pbsim.dynamics.equality import PENALTY_FEATURE
from pbsim.dynamics.joints import integrate_config
from pbsim.dynamics.workspace import make_work
from pbsim.errors import InputError
from pbsim.integrators.base import StepSpec, contact_equality_used
from pbsim.integrators.pbad.order2 import BODY_CONTACT, make_pbad_work, pbad2_finish, pbad2_prepare
from pbsim.integrators.pbad.energy import contact_step_limit, world_twists
from pbsim.integrators.pbfd.solve import (STEP_FRAC, WINDOW, pbfd_converged, pbfd_lbfgs, pbfd_lm,
                                          pbfd_lm_launch_begin, pbfd_lm_launch_iterate)
from pbsim.optim.lm import lm_launch_end
from pbsim.optim.substep import substep_step

# pm: PbfdModel (shared); pw: PbadWork (batched; order 2); V: (B, 4, nv) vectors of the QR solve /
# LBFGS; wf: second dynamics workspace (M(q_k)'s factor, LBFGS only); info: (B, 5) [iterations,
# |r|_inf, converged, GE, sub-steps the step became (1: none)]; method: 0 JTJ-LM, 1 LBFGS
# (informative: one kernel per optimizer); qs, vs: (B, nq), (B, nv) a sub-step's start; levels:
# the fallback's levels of halving (0: none); fbn: (B,) steps that fell back (zeroed by the drivers)
# st: (B, 8) LM state between launches [lam, GE, |r|_inf, it, conv, stopped, GE_ref, -] (the GPU's
# per-launch schedule, as pbad's); done: (B,) 1.0 once a trajectory's solver has stopped
PbfdX = namedtuple("PbfdX", "pm pw V wf info st done maxit gtol xtol method qs vs levels fbn")
BATCHED = ("pw", "V", "wf", "info", "st", "done", "qs", "vs", "fbn")


def make_pbfd_x(integrator, B, lbfgs: bool) -> PbfdX:
    """The steps' ``x`` for ``B`` trajectories of a made pbfd (or pbd_friction) integrator
    (``lbfgs``: the LBFGS pair store and the second dynamics workspace)."""
    I = integrator
    model = I.model
    pw = make_pbad_work(model, I.pm, B, 2, lbfgs_m=8 if lbfgs else 1)
    z = np.zeros
    pw = pw._replace(J=z((B, 1, 1)))  # the unused 4th slot of the LM's work rows
    n = max(model.nv, 1)
    info = z((B, 5))
    info[:, 4] = 1.0
    return PbfdX(I.pm, pw, z((B, 4, n)), make_work(model, B if lbfgs else 1), info, z((B, 8)), z(B),
                 int(I.maxit), float(I.gtol), float(I.xtol), 1 if lbfgs else 0, z((B, model.nq)), z((B, model.nv)),
                 int(I.substeps_on_failure), z(B))


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
def pbfd_prepare(m, s, w, pw, b, q, v, dt):
    """PBAD's :func:`~pbsim.integrators.pbad.order2.pbad2_prepare` (poses of q_{k-1}, q_k; the guess
    q_k (+) dt v_k, kept out of other bodies), then the guess' step shortened as the solver's
    trials are (:func:`pbsim.integrators.pbfd.solve.pbfd_trial_point`): a contact point entering the
    environment lands at :data:`~pbsim.integrators.pbfd.solve.STEP_FRAC` of the depth the
    linearised step predicts.  Unshortened, a body landing at speed starts the solve deep in the
    floor (issue 30: the humanoid's knees 4 cm in at 20 ms), where the contact loads make hess E
    indefinite and JTJ-LM on GE crawls without reaching a root (paper 003's Lemma 4.2 needs E
    locally convex: docs/benchmarks/pbfd.md, "Stalled steps"); from the shortened guess it
    converges in a few iterations.  A step in which no point enters is unchanged."""
    pbad2_prepare(m, s, w, pw, b, q, v, dt)
    if s.npts > 0:
        d = pw.d[b]  # the guess' step dt v_k (shortened by the body-body limit)
        xi = pw.xi[b, 0]
        world_twists(m, pw.T[b, 1], xi)
        a = contact_step_limit(m, s, pw.T[b, 1], xi, d, STEP_FRAC)
        if a < 1.0:
            for j in range(m.nv):
                d[j] *= a
            integrate_config(m, q[b], d, pw.qn[b, 2], w.Rj[b])


@kernel
def pbfd_attempt(m, s, c, w, sw, x, b, q, v, dt, qn, vn):
    """One PBFD step of trajectory b by JTJ-LM: q_{k-1}, q_k poses and the guess (:func:`pbfd_prepare`),
    the solve of r(q_{k+1}) = 0, v_{k+1} = (q_{k+1} (-) q_k) / dt (no fallback: :data:`pbfd_step`)."""
    pw = x.pw
    pbfd_prepare(m, s, w, pw, b, q, v, dt)
    pbfd_lm(m, s, x.pm, c, w, pw, x.V, b, q, v, dt, x.maxit, x.gtol, x.xtol, x.info[b])
    pbad2_finish(m, w, pw, b, q, dt, qn, vn)


@kernel
def pbfd_lbfgs_attempt(m, s, c, w, sw, x, b, q, v, dt, qn, vn):
    """:func:`pbfd_attempt` with LBFGS on GE."""
    pw = x.pw
    pbfd_prepare(m, s, w, pw, b, q, v, dt)
    pbfd_lbfgs(m, s, x.pm, c, w, x.wf, pw, x.V, b, q, v, dt, x.maxit, x.gtol, x.xtol, x.info[b])
    pbad2_finish(m, w, pw, b, q, dt, qn, vn)


# the contract's step kernels: the attempt with the sub-step fallback of a stalled step inside.
# Each is a kernel of its own name: the batch drivers bound to a step are cached on disk under the
# step's name (pbsim.jit.bind), and specialize's copies all keep substep_step's name
# (two bindings with the same argument types then load one another's machine code)
pbfd_lm_substep = specialize(substep_step, "pbfd_step", _attempt=pbfd_attempt)
pbfd_lbfgs_substep = specialize(substep_step, "pbfd_lbfgs_step", _attempt=pbfd_lbfgs_attempt)


@kernel
def pbfd_step(m, s, c, w, sw, x, b, q, v, dt, qn, vn):
    """One PBFD step by JTJ-LM (:func:`pbfd_attempt`) with the sub-step fallback of a stalled step
    (:func:`pbsim.optim.substep.substep_step`)."""
    pbfd_lm_substep(m, s, c, w, sw, x, b, q, v, dt, qn, vn)


@kernel
def pbfd_lbfgs_step(m, s, c, w, sw, x, b, q, v, dt, qn, vn):
    """:func:`pbfd_step` with LBFGS on GE (:func:`pbfd_lbfgs_attempt`)."""
    pbfd_lbfgs_substep(m, s, c, w, sw, x, b, q, v, dt, qn, vn)


# the per-launch schedule (paper 003 Fig. 3, Sec. V-A): one JTJ-LM iteration per launch across all
# trajectories, a trajectory whose solver has stopped skips its launches; the iteration kernel is
# the one pbfd_lm's loop runs (the same iterates as pbfd_step)

@kernel
def pbfd_begin(m, s, c, w, sw, x, b, q, v, dt, qn, vn):
    """Per-launch schedule, phase 1: poses of q_{k-1}, q_k, the guess, the LM state there."""
    pw = x.pw
    pbfd_prepare(m, s, w, pw, b, q, v, dt)
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
    info[4] = 1.0  # no fallback in this schedule (refused unless substep=0)
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
# names of their own: pbsim.jit.Variants), and equality constraints (the penalty in E, the trials'
# second-order correction, the scaling without the penalty, the end-of-step projection) only into
# runs of models that have them: compiled into every build, they made pbfd's step on two free
# 6-link chains 26 % slower (57.9 -> 72.7 us at 5 ms, one thread; pbsim.jit.HEAVY_FEATURES).
EQUALITY = {**PENALTY_FEATURE, "scale_without_penalty": unused}
BODY = dict(features={"body_contact": BODY_CONTACT, "equality": EQUALITY}, used=contact_equality_used)
STEP = StepSpec(pbfd_step, extra=pbfd_extra, batched=BATCHED, info="info",
                per_launch=(pbfd_begin, pbfd_iterate, pbfd_end, None), done="done", fallback="levels", **BODY)
STEP_LBFGS = StepSpec(pbfd_lbfgs_step, extra=pbfd_lbfgs_extra, batched=BATCHED, info="info", fallback="levels",
                      **BODY)
