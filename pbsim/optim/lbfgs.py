"""LBFGS (paper 000 Sec. 5, ref. [19]): the two-loop recursion, the pair store and one loop with
Armijo backtracking, generic over the problem like :mod:`pbsim.optim.lm`'s.

Per trajectory and allocation-free: the history lives in caller-owned arrays S, Y (m, n), rho,
alpha (m,) used as a ring buffer with ``count`` stored pairs ending at slot ``head - 1``.

The loop (:func:`lbfgs_loop`) calls the problem-specific pieces through the global names below,
which ``pbsim.jit.specialize`` rebinds per problem (``specialize(lbfgs_loop, "pbad2",
lbfgs_eval=..., lbfgs_h0=..., lbfgs_try=..., lbfgs_take=...)``).  A problem is an opaque tuple
``P`` (the hooks unpack it) plus the rows ``lw = (g, gt, dx, s, y, S, Y, rho, alpha)`` of
trajectory ``b``: gradient at the iterate and at the trial (n), search direction, step and
gradient difference (n), the pair store.  The hooks:

- ``lbfgs_eval(P, b) -> (E, gn)``: the objective at the iterate with ``g`` there, and the norm
  the convergence tests compare with ``gtol``;
- ``lbfgs_h0(P, b, h0, d)``: ``d <- h0 H0 d``, the initial inverse Hessian (PBAD: ``dt^2 M^-1``);
- ``lbfgs_limit(P, b, slope) -> slope`` (default :func:`lbfgs_no_limit`): shorten the direction
  ``dx`` in place (contact, a trust cap) and return the slope ``g.dx`` scaled likewise;
- ``lbfgs_try(P, b) -> Et``: the trial iterate from the step ``s`` and the objective there;
- ``lbfgs_take(P, b) -> gn``: the accepted trial becomes the iterate, with ``gt`` its gradient
  (the loop then copies ``gt`` into ``g``), and the norm there;
- ``lbfgs_gconv(gn, gtol) -> bool`` (default :func:`lbfgs_gconv_below`): the norm test that stops
  the loop converged;
- ``lbfgs_converged(gn, small, gtol) -> bool`` (default :func:`lbfgs_small_or_below`): the final
  verdict (``small``: the loop stopped on a step below ``xtol``).

Options: ``maxit``, ``gtol``, ``xtol``; ``rtol``: the Armijo test accepts
``Et <= E + 1e-4 step g.dx + rtol |E|`` (0: without the last term).
"""
from pbsim.jit import kernel
from pbsim.optim.linalg import dot, inf_norm

ARMIJO = 1e-4  # sufficient decrease constant
BACKTRACKS = 40  # step halvings of one line search


@kernel
def lbfgs_first_loop(g, S, Y, rho, alpha, count, head, d, n):
    """First loop of the two-loop recursion (newest pair first): ``d`` = the projected -g, with the
    ``alpha`` coefficients stored for :func:`lbfgs_second_loop`.  The caller then applies its
    initial inverse Hessian H0 to ``d`` (scaled identity, a diagonal, or an O(n) solve)."""
    mm = S.shape[0]
    for i in range(n):
        d[i] = -g[i]
    for t in range(count):
        k = (head - 1 - t) % mm
        s = 0.0
        for i in range(n):
            s += S[k, i] * d[i]
        a = rho[k] * s
        alpha[k] = a
        for i in range(n):
            d[i] -= a * Y[k, i]


@kernel
def lbfgs_second_loop(S, Y, rho, alpha, count, head, d, n):
    """Second loop (oldest pair first): ``d`` = -H_k g once H0 has been applied."""
    mm = S.shape[0]
    for t in range(count - 1, -1, -1):
        k = (head - 1 - t) % mm
        s = 0.0
        for i in range(n):
            s += Y[k, i] * d[i]
        beta = rho[k] * s
        for i in range(n):
            d[i] += S[k, i] * (alpha[k] - beta)


@kernel
def lbfgs_push(S, Y, rho, s_new, y_new, head, n):
    """Store a pair (s, y) if s.y > 0; returns the new head (unchanged if rejected)."""
    sy = 0.0
    for i in range(n):
        sy += s_new[i] * y_new[i]
    if not (sy > 1e-300):
        return head
    mm = S.shape[0]
    k = head % mm
    for i in range(n):
        S[k, i] = s_new[i]
        Y[k, i] = y_new[i]
    rho[k] = 1.0 / sy
    return head + 1


# ---------------------------------------------------------------------------------------------
# the problem's hooks: placeholders, rebound by specialize (a loop left unbound does not compile)

def lbfgs_eval(P, b):
    """(E, gn) at the iterate, g filled (module docstring)."""
    raise NotImplementedError("bind the LBFGS hooks with pbsim.jit.specialize")


def lbfgs_h0(P, b, h0, d):
    """d <- h0 H0 d (module docstring)."""
    raise NotImplementedError("bind the LBFGS hooks with pbsim.jit.specialize")


def lbfgs_try(P, b):
    """Trial iterate from the step s and the objective there (module docstring)."""
    raise NotImplementedError("bind the LBFGS hooks with pbsim.jit.specialize")


def lbfgs_take(P, b):
    """The trial iterate becomes the iterate, gt its gradient; returns gn (module docstring)."""
    raise NotImplementedError("bind the LBFGS hooks with pbsim.jit.specialize")


@kernel
def lbfgs_no_limit(P, b, slope):
    """The direction as it is (the default ``lbfgs_limit``)."""
    return slope


@kernel
def lbfgs_gconv_below(gn, gtol):
    """Converged on the norm: gn < gtol (the default ``lbfgs_gconv``)."""
    return gn < gtol


@kernel
def lbfgs_small_or_below(gn, small, gtol):
    """The final verdict: stopped on a small step, or gn < gtol (the default ``lbfgs_converged``)."""
    return small or gn < gtol


lbfgs_limit = lbfgs_no_limit
lbfgs_gconv = lbfgs_gconv_below
lbfgs_converged = lbfgs_small_or_below


# ---------------------------------------------------------------------------------------------
# the loop

@kernel
def lbfgs_armijo(Et, E, step, slope, rtol):
    """The sufficient decrease test: Et <= E + ARMIJO step slope (+ rtol |E| when rtol != 0)."""
    if rtol == 0.0:
        return Et <= E + ARMIJO * step * slope
    return Et <= E + ARMIJO * step * slope + rtol * abs(E)


@kernel
def lbfgs_loop(P, lw, b, n, maxit, gtol, xtol, rtol, info):
    """LBFGS with Armijo backtracking on problem ``P`` for trajectory ``b`` from the iterate it
    holds; the direction falls back to preconditioned steepest descent when it is no descent
    direction, and h0 = s.y / y.H0 y from the newest stored pair.  ``info = [iterations, gn,
    converged, E]``."""
    g, gt, dx, s_new, y_new, S, Y, rho, alpha = lw
    E, gn = lbfgs_eval(P, b)
    head = 0
    count = 0
    h0 = 1.0
    it = 0
    small = False
    mm = S.shape[0]
    while it < maxit and not lbfgs_gconv(gn, gtol):
        it += 1
        lbfgs_first_loop(g, S, Y, rho, alpha, count, head, dx, n)
        lbfgs_h0(P, b, h0, dx)
        lbfgs_second_loop(S, Y, rho, alpha, count, head, dx, n)
        slope = dot(g, dx, n)
        if not (slope < 0.0):  # not a descent direction: preconditioned steepest descent
            for j in range(n):
                dx[j] = -g[j]
            lbfgs_h0(P, b, h0, dx)
            slope = dot(g, dx, n)
        slope = lbfgs_limit(P, b, slope)
        step = 1.0
        ok = False
        Et = E
        for _ls in range(BACKTRACKS):
            for j in range(n):
                s_new[j] = step * dx[j]
            Et = lbfgs_try(P, b)
            if lbfgs_armijo(Et, E, step, slope, rtol):
                ok = True
                break
            step *= 0.5
        if not ok:
            small = inf_norm(s_new, n) < xtol
            break
        gn = lbfgs_take(P, b)
        # the pair (gradients at different base points in a tangent space: first-order consistent)
        for j in range(n):
            y_new[j] = gt[j] - g[j]
        head2 = lbfgs_push(S, Y, rho, s_new, y_new, head, n)
        if head2 != head:
            head = head2
            if count < mm:
                count += 1
            for j in range(n):
                dx[j] = y_new[j]
            lbfgs_h0(P, b, 1.0, dx)
            h0 = dot(s_new, y_new, n) / dot(y_new, dx, n)
        for j in range(n):
            g[j] = gt[j]
        E = Et
        if inf_norm(s_new, n) < xtol:
            small = True
            break
    info[0] = it
    info[1] = gn
    info[2] = 1.0 if lbfgs_converged(gn, small, gtol) else 0.0
    info[3] = E
