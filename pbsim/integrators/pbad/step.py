"""PBAD order 2 with Levenberg-Marquardt (paper 000 Eq. 5, Sec. 5) as the contract's step kernel
(:class:`pbsim.integrators.base.StepSpec`), run by the generic CPU batch and GPU drivers.

Two schedules of the same per-trajectory LM (the kernels of :mod:`.order2`):

- ``pbad_step`` ("kernel" schedule): one thread runs a whole step, LM loop included
  (``pbad2_prepare`` + ``pbad2_lm``), like the CPU ``pbad`` integrator.
- ``pbad_begin`` / ``pbad_iterate`` / ``pbad_end`` ("launch" schedule, paper 000 Fig. 1): one
  LM iteration per launch across all trajectories; the LM state of each trajectory (lambda,
  E, |g|, iteration count, flags) lives in ``x.st`` between launches and converged trajectories
  skip their iterations.  ``pbad_iterate`` is one pass of ``pbad2_lm``'s ``while`` loop, so
  both schedules give the same iterates as the CPU (bit for bit under the simulator).

Only order 2 with LM; LBFGS and orders 3/4 run through the integrator's own ``step`` (CPU).
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from pbsim.backends.kernel import kernel
from pbsim.errors import InputError
from pbsim.integrators.base import StepSpec
from pbsim.integrators.pbad.order2 import make_pbad_work, pbad2_eval, pbad2_finish, pbad2_lm, pbad2_prepare, pbad2_trial
from pbsim.optim.linalg import inf_norm
from pbsim.optim.lm import lm_stalled_converged

# pm: PbadModel (shared); pw: PbadWork (batched); st: (B, 8) LM state [lam, E, gn, it, conv, done,
# -, -]; info: (B, 4) [iterations, |g|_inf, converged, E] like the CPU integrator's; done: (B,)
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
    pw = make_pbad_work(I.model, I.pm, B, 2, lbfgs_m=1)
    z = np.zeros
    pw = pw._replace(J=z((B, 1, 1)), S=z((B, 1, 1)), Y=z((B, 1, 1)), rho=z((B, 1)), alpha=z((B, 1)),
                     r=z((B, 1)), rt=z((B, 1)))  # unused by order-2 LM: keep device memory small
    return PbadX(I.pm, pw, z((B, 8)), z((B, 4)), z(B), int(I.maxit), float(I.gtol), float(I.xtol),
                 bool(I.hessian == "exact"))


@kernel
def pbad_step(m, s, c, w, sw, x, b, q, v, dt, qn, vn):
    """One whole PBAD step, the LM loop inside (in-kernel schedule)."""
    pbad2_prepare(m, w, x.pw, b, q, v, dt)
    pbad2_lm(m, x.pm, c, w, x.pw, b, q, v, dt, x.maxit, x.gtol, x.xtol, x.exact_h, x.info[b])
    pbad2_finish(m, w, x.pw, b, q, dt, qn, vn)


@kernel
def pbad_begin(m, s, c, w, sw, x, b, q, v, dt, qn, vn):
    """Per-launch schedule, phase 1: poses of q_{k-1}, q_k, initial guess, E/g/H there."""
    pw = x.pw
    pbad2_prepare(m, w, pw, b, q, v, dt)
    E = pbad2_eval(m, x.pm, c, w, pw, b, pw.qn[b, 2], q[b], v[b], dt, True, True, x.exact_h, pw.g[b], pw.H[b])
    st = x.st[b]
    st[0] = 1e-6  # lambda
    st[1] = E
    st[2] = inf_norm(pw.g[b], m.nv)
    st[3] = 0.0  # iterations
    st[4] = 0.0  # converged
    st[5] = 0.0  # stopped
    x.done[b] = 0.0


@kernel
def pbad_iterate(m, s, c, w, sw, x, b, q, v, dt, qn, vn):
    """Per-launch schedule, phase 2: one LM iteration (one pass of pbad2_lm's loop)."""
    st = x.st[b]
    if st[5] != 0.0:
        return
    pw = x.pw
    n = m.nv
    qi = pw.qn[b, 2]
    qt = pw.qt[b, 2]
    g = pw.g[b]
    H = pw.H[b]
    dx = pw.dx[b]
    lam = st[0]
    E = st[1]
    gn = st[2]
    it = st[3]
    if it >= x.maxit:
        st[5] = 1.0
        x.done[b] = 1.0
        return
    if gn < x.gtol:
        st[4] = 1.0
        st[5] = 1.0
        x.done[b] = 1.0
        return
    it += 1.0
    st[3] = it
    lam, accepted, small = pbad2_trial(m, x.pm, c, w, pw, b, q, v, dt, x.exact_h, x.xtol, lam, E)
    st[0] = lam
    if not accepted:
        st[4] = 1.0 if lm_stalled_converged(H, n, small, gn, x.gtol) else 0.0
        st[5] = 1.0
        x.done[b] = 1.0
        return
    for k in range(m.nq):
        qi[k] = qt[k]
    step = inf_norm(dx, n)
    E = pbad2_eval(m, x.pm, c, w, pw, b, qi, q[b], v[b], dt, True, True, x.exact_h, g, H)
    gn = inf_norm(g, n)
    st[1] = E
    st[2] = gn
    if step < x.xtol:
        st[4] = 1.0
        st[5] = 1.0
        x.done[b] = 1.0


@kernel
def pbad_end(m, s, c, w, sw, x, b, q, v, dt, qn, vn):
    """Per-launch schedule, phase 3: diagnostics (as pbad2_lm's) and (qn, vn)."""
    st = x.st[b]
    info = x.info[b]
    info[0] = st[3]
    info[1] = st[2]
    info[2] = 1.0 if (st[4] != 0.0 or st[2] < x.gtol) else 0.0
    info[3] = st[1]
    pbad2_finish(m, w, x.pw, b, q, dt, qn, vn)


# order-2 LM as the contract's step, with both GPU schedules
STEP = StepSpec(pbad_step, extra=pbad_extra, batched=BATCHED, info="info",
                per_launch=(pbad_begin, pbad_iterate, pbad_end, None), done="done")
