"""Finite-difference helpers for the PBAD tests (tangent-space gradients on the joint groups)."""

import numpy as np

import pbsim


def _skew(t):
    return np.array([[0, -t[2], t[1]], [t[2], 0, -t[0]], [-t[1], t[0], 0]])


def _jr_T(t):
    """Transposed right Jacobian of SO(3): exp(t + z) = exp(t) exp(Jr(t) z)."""
    th = np.linalg.norm(t)
    S = _skew(t)
    if th < 1e-3:  # series: the closed form cancels catastrophically
        return np.eye(3) + (0.5 - th**2 / 24) * S + (1 / 6 - th**2 / 120) * S @ S
    return np.eye(3) + (1 - np.cos(th)) / th**2 * S + (th - np.sin(th)) / th**3 * S @ S


def _expm(t):
    th = np.linalg.norm(t)
    S = _skew(t)
    if th < 1e-12:
        return np.eye(3) + S
    return np.eye(3) + np.sin(th) / th * S + (1 - np.cos(th)) / th**2 * S @ S


def chart_gradient(model, delta, g):
    """grad of phi(delta) = E(q (+) delta) from the tangent gradient g at q (+) delta."""
    out = np.array(g, float)
    for i in range(model.nb):
        jt, j = int(model.jtype[i]), int(model.k.iv[i])
        if jt == 2:
            out[j : j + 3] = _jr_T(delta[j : j + 3]) @ g[j : j + 3]
        elif jt == 3:
            out[j : j + 3] = _expm(delta[j + 3 : j + 6]) @ g[j : j + 3]
            out[j + 3 : j + 6] = _jr_T(delta[j + 3 : j + 6]) @ g[j + 3 : j + 6]
    return out


def fd_check(model, f, q, eps=1e-6):
    """f(q) -> (E, g, H).  Returns relative errors (gradient, Hessian) against central differences."""
    E, g, H = f(q)
    n = model.nv
    gf = np.zeros(n)
    Hf = np.zeros((n, n))
    for a in range(n):
        d = np.zeros(n)
        d[a] = eps
        Ep, gp, _ = f(pbsim.integrate(model, q, d))
        Em, gm, _ = f(pbsim.integrate(model, q, -d))
        gf[a] = (Ep - Em) / (2 * eps)
        Hf[:, a] = (chart_gradient(model, d, gp) - chart_gradient(model, -d, gm)) / (2 * eps)
    return np.abs(g - gf).max() / np.abs(gf).max(), np.abs(H - Hf).max() / np.abs(Hf).max()


def colloc_fd_jacobian(model, integ, nodes, dt, eps=1e-6):
    """Central differences of the residual over each unknown node's tangent increment, the rows of
    the perturbed node read in that node's fixed chart (pbad_fd.chart_gradient, as the order-2
    Hessian test): the analytic Jacobian is the derivative of each node's residual in its own
    chart (for a free joint it lacks the term [r_lin]x of the moving frame, which vanishes at a
    root)."""
    K = integ.order
    nv = model.nv
    n = (K - 1) * nv
    Jf = np.zeros((n, n))
    for u in range(K - 1):
        for a in range(nv):
            cols = []
            for sgn in (1.0, -1.0):
                d = np.zeros(nv)
                d[a] = sgn * eps
                x = nodes.copy()
                x[0, u + 2] = pbsim.integrate(model, nodes[0, u + 2], d)
                r = integ.residual(x, dt)[0][0].copy()
                r[u * nv : (u + 1) * nv] = chart_gradient(model, d, r[u * nv : (u + 1) * nv])
                cols.append(r)
            Jf[:, u * nv + a] = (cols[0] - cols[1]) / (2 * eps)
    return Jf
