"""Levenberg-Marquardt (paper 000 Sec. 5, ref. [18]): one iteration kernel and one loop, generic
over the problem; the damped solve and the lambda rule.  Per trajectory and allocation-free.

The loop (:func:`lm_loop`: :func:`lm_begin`, :func:`lm_iterate` until it stops, :func:`lm_end`)
calls the problem-specific pieces through the global names below, which
``pbsim.jit.specialize`` rebinds per problem (``specialize(lm_loop, "pbad2",
lm_eval=..., lm_try=..., lm_take=...)``).  A problem is an opaque tuple ``P`` of its arrays and
constants (the hooks unpack it) plus the rows ``lw = (g, H, M2, L, dx)`` of trajectory ``b`` that
the damped solve uses: gradient (n), Hessian or its Gauss-Newton form (n, n), two (n, n)
scratch matrices and the step (n).  The hooks:

- ``lm_eval(P, b) -> (E, gn)``: the objective at the iterate with the ``g``/``H`` (or residual and
  Jacobian) there, and the norm the convergence test compares with ``gtol``;
- ``lm_try(P, b, tries) -> Et``: the trial iterate from the step ``dx`` (a problem may shorten
  ``dx`` in place first) and the objective there (``tries``: failed tries of this iteration);
- ``lm_take(P, b)``: the trial iterate becomes the iterate;
- ``lm_first(P, b, E, xtol) -> status`` (default :func:`lm_no_first`): a step tried before the
  damped ones (collocation: the Newton step of its square system); :data:`LM_DAMPED` to go on
  with the damped tries (``g``, ``H`` must then be ready), :data:`LM_ACCEPTED` (taken),
  :data:`LM_ROOT` (no decrease but the step is below ``xtol``: converged);
- ``lm_stalled(H, n, small, gn, gtol) -> bool`` (default :func:`lm_stalled_converged`): whether
  an iteration that found no decrease counts as converged.

Options of the loop: ``maxit``, ``gtol``, ``xtol``; ``rtol``, a step is accepted when
``Et <= E + rtol |E|`` (0: ``Et <= E``); ``window`` > 0 stops (unconverged) when E has not halved
over ``window`` iterations (a least-squares problem stalled at a local minimum that is no root).
"""
from pbsim.jit import kernel
from pbsim.optim.linalg import cholesky_factor, cholesky_solve, inf_norm

LAMBDA_MIN = 1e-12
LAMBDA_MAX = 1e12
LAMBDA0 = 1e-6  # initial damping
TRIES = 30  # damped solves per iteration before giving up

# outcome of an iteration's trial (lm_trial) and of the lm_first hook
LM_DAMPED, LM_ACCEPTED, LM_SMALL, LM_FAILED, LM_ROOT = 0, 1, 2, 3, 4


@kernel
def lm_solve(H, g, lam, A, L, dx, n):
    """dx = -(H + lam (diag(H) + 1e-9 I))^-1 g (Marquardt scaling).  Returns False when the damped
    matrix is not positive definite (the caller raises lambda and retries)."""
    for i in range(n):
        for j in range(n):
            A[i, j] = H[i, j]
        A[i, i] += lam * (abs(H[i, i]) + 1e-9)
    if not cholesky_factor(A, L, n):
        return False
    for i in range(n):
        dx[i] = -g[i]
    cholesky_solve(L, dx, dx, n)
    return True


@kernel
def lm_accept(lam):
    """Lambda after an accepted step."""
    v = lam / 3.0
    return v if v > LAMBDA_MIN else LAMBDA_MIN


@kernel
def lm_reject(lam):
    """Lambda after a rejected step or an indefinite damped matrix."""
    v = lam * 10.0 if lam > 1e-6 else 1e-5
    return v if v < LAMBDA_MAX else LAMBDA_MAX


@kernel
def lm_stalled_converged(H, n, small, gn, gtol):
    """Whether an LM solve that found no decrease of its objective (resolvable in floating point)
    counts as converged: the last step was below xtol (``small``) with |g| near gtol, or the Newton
    correction |g| stands for (|g| / max diag H, in rad or m) is below 1e-10."""
    hmax = 0.0
    for k in range(n):
        if H[k, k] > hmax:
            hmax = H[k, k]
    return (small and gn < 1e3 * gtol) or gn < 1e-10 * hmax


@kernel
def lm_stalled_small(H, n, small, gn, gtol):
    """:func:`lm_stalled_converged` without the Hessian test: converged only when the last step
    was below xtol with the norm near gtol (least squares, where ``H`` is J^T J)."""
    return small and gn < 1e3 * gtol


@kernel
def lm_no_first(P, b, E, xtol):
    """No step before the damped ones (the default ``lm_first``)."""
    return LM_DAMPED


# ---------------------------------------------------------------------------------------------
# the problem's hooks: placeholders, rebound by specialize (a loop left unbound does not compile)

def lm_eval(P, b):
    """(E, gn) at the iterate (module docstring)."""
    raise NotImplementedError("bind the LM hooks with pbsim.jit.specialize")


def lm_try(P, b, tries):
    """Trial iterate from dx and the objective there (module docstring)."""
    raise NotImplementedError("bind the LM hooks with pbsim.jit.specialize")


def lm_take(P, b):
    """The trial iterate becomes the iterate (module docstring)."""
    raise NotImplementedError("bind the LM hooks with pbsim.jit.specialize")


lm_first = lm_no_first
lm_stalled = lm_stalled_converged


# ---------------------------------------------------------------------------------------------
# the loop

@kernel
def lm_accepts(Et, E, rtol):
    """The decrease test: Et <= E + rtol |E| (rtol = 0: Et <= E, also for E = inf)."""
    if rtol == 0.0:
        return Et <= E
    return Et <= E + rtol * abs(E)


@kernel
def lm_trial(P, lw, b, n, lam, E, xtol, rtol):
    """The trials of one iteration at the iterate (objective ``E``, its g and H in ``lw``): the
    problem's first step, then damped solves, each accepted on a decrease of E, else lambda is
    raised and the solve retried (:data:`TRIES` times).  Returns ``(lam, outcome)``:
    :data:`LM_ACCEPTED` (the trial iterate is the problem's, step in ``dx``), :data:`LM_SMALL` (no
    decrease, the last step was below ``xtol``), :data:`LM_FAILED`, or :data:`LM_ROOT`."""
    g, H, M2, L, dx = lw
    status = lm_first(P, b, E, xtol)
    if status != LM_DAMPED:
        return lam, status
    for tries in range(TRIES):
        if lm_solve(H, g, lam, M2, L, dx, n):
            Et = lm_try(P, b, tries)
            if lm_accepts(Et, E, rtol):
                return lm_accept(lam), LM_ACCEPTED
            if inf_norm(dx, n) < xtol:
                return lam, LM_SMALL
        lam = lm_reject(lam)
    return lam, LM_FAILED


@kernel
def lm_begin(P, b):
    """The loop's start: ``(lam, E, gn)`` at the initial iterate."""
    E, gn = lm_eval(P, b)
    return LAMBDA0, E, gn


@kernel
def lm_iterate(P, lw, b, n, lam, E, gn, it, E_ref, maxit, gtol, xtol, rtol, window):
    """One LM iteration from the state ``(lam, E, gn, it, E_ref)`` (``E_ref``: E at the start of
    the current stall window).  Returns ``(lam, E, gn, it, E_ref, conv, stop)``: the new state,
    whether the solve has converged and whether it stops here.  The loop and the GPU's
    one-iteration-per-launch schedule both run this kernel, hence the same iterates."""
    if it >= maxit:
        return lam, E, gn, it, E_ref, False, True
    if gn < gtol:
        return lam, E, gn, it, E_ref, True, True
    if window > 0 and it > 0 and it % window == 0:  # stalled at a minimum that is not a root
        if E > 0.5 * E_ref:
            return lam, E, gn, it, E_ref, False, True
        E_ref = E
    it += 1
    lam, status = lm_trial(P, lw, b, n, lam, E, xtol, rtol)
    if status == LM_ROOT:
        return lam, E, gn, it, E_ref, True, True
    if status != LM_ACCEPTED:
        return lam, E, gn, it, E_ref, lm_stalled(lw[1], n, status == LM_SMALL, gn, gtol), True
    lm_take(P, b)
    step = inf_norm(lw[4], n)
    E, gn = lm_eval(P, b)
    return lam, E, gn, it, E_ref, step < xtol, step < xtol


@kernel
def lm_end(info, it, gn, conv, E, gtol):
    """Diagnostics ``info = [iterations, gn, converged, E]``."""
    info[0] = it
    info[1] = gn
    info[2] = 1.0 if (conv or gn < gtol) else 0.0
    info[3] = E


@kernel
def lm_loop(P, lw, b, n, maxit, gtol, xtol, rtol, window, info):
    """Levenberg-Marquardt on problem ``P`` for trajectory ``b`` from the iterate it holds:
    ``info = [iterations, gn, converged, E]``."""
    lam, E, gn = lm_begin(P, b)
    it = 0
    E_ref = E
    conv = False
    stop = False
    while not stop:
        lam, E, gn, it, E_ref, conv, stop = lm_iterate(P, lw, b, n, lam, E, gn, it, E_ref, maxit, gtol, xtol, rtol,
                                                       window)
    lm_end(info, it, gn, conv, E, gtol)


# ---------------------------------------------------------------------------------------------
# the GPU's one-iteration-per-launch schedule: the loop above cut at lm_iterate, its state kept
# between launches in a row st (8,) = [lam, E, gn, it, conv, stopped, E_ref, -]

@kernel
def lm_launch_begin(P, b, st):
    """Phase 1 (:func:`lm_begin`): the state at the initial iterate into ``st``."""
    lam, E, gn = lm_begin(P, b)
    st[0] = lam
    st[1] = E
    st[2] = gn
    st[3] = 0.0  # iterations
    st[4] = 0.0  # converged
    st[5] = 0.0  # stopped
    st[6] = E  # E at the start of the stall window


@kernel
def lm_launch_iterate(P, lw, b, n, st, maxit, gtol, xtol, rtol, window):
    """Phase 2: one :func:`lm_iterate` on the state in ``st`` (a stopped one is left alone);
    returns whether the loop stopped in this launch."""
    if st[5] != 0.0:
        return False
    lam, E, gn, it, E_ref, conv, stop = lm_iterate(P, lw, b, n, st[0], st[1], st[2], int(st[3]), st[6], maxit, gtol,
                                                   xtol, rtol, window)
    st[0] = lam
    st[1] = E
    st[2] = gn
    st[3] = it
    st[4] = 1.0 if conv else 0.0
    st[6] = E_ref
    if stop:
        st[5] = 1.0
    return stop


@kernel
def lm_launch_end(info, st, gtol):
    """Phase 3: the loop's diagnostics (:func:`lm_end`) from ``st``."""
    lm_end(info, st[3], st[2], st[4] != 0.0, st[1], gtol)
