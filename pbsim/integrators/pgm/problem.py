"""The PGM's problem: the hooks' placeholders, the scratch's fields and options, the stats columns, the velocity."""

from __future__ import annotations

import math

import numpy as np

from pbsim.jit import kernel
from pbsim.dynamics.joints import BALL, FREE, difference_config
from pbsim.integrators.pbad.order2 import rotate_by_exp_transpose
from pbsim.optim.qp import QP_SIMPLEX, qp_work_as

# stats columns
S_SUB, S_PFAIL, S_QPFAIL, S_CAP, S_ITCAP, S_REJ, S_NEWTON, S_RES, S_GACC, S_KRISE, S_K0, S_K1 = range(12)
# the work: evaluations of G (and A), LU factorizations, QPs, QP iterations
S_EVAL, S_LU, S_QP, S_QPIT = range(12, 16)
# the most body-body candidates a (sub-)step's contact set dropped (the buffer's overflow)
S_OVER = 16
NSTATS = 17

# The shared scratch (leading axis B; P = max(1, scene points + body-body capacity), V = vx, MP = P V,
# n = nv): q0, v0
# the sub-step's start; th, thn, thb, qp (nq) accepted / trial / best-projection / predicted
# configurations; vel, acc (n) thetadot, thetaddot; dn (n) the projection's Newton direction; Pm (n, n) the velocity map; G (n), A, LU (n, n),
# piv (n) ints; dq, gk (QP scratch), g (n); M (n, n) h^2 Q; sdp (P) predicted depths; act (P) ints:
# candidates; cap (P); Vt (P, V, 3) vertices; Dv (P, V, 3, 3) their x-derivatives; T1, T2, Dn, Dd
# (3, 3); Jc (n, 12) chain columns; Bm, Dm, HX (MP, n); wts, wn, qb, lo, hi (MP); QA (MP, MP); qw (qp_work_as,
# kmax max(4 n, 64); with body-body candidates MP: the proximal term makes every weight a possible free
# dof, and past kmax the active-set QP finishes by FISTA: a three-box stack's nmdp step took 114 ms
# instead of 6.4); qinfo (4); bstart (P + 1), btype (P), bmu (P); info (4); stats (NSTATS); the
# body-body candidates: Tq (nb, 3, 4) poses at the step's start, cface (P) ints their item's box face,
# csig (P) their tangent basis' sign, csc (P) their scores (pbsim.contact.depth.pair_candidates_state),
# cpl (P, 7) their contact planes for the step (pbsim.contact.nmdp.pair_plane); Lq (n, n) the Cholesky
# factor of h^2 Q and qc the last QP's c when it ran in its dual form (else 0; pbsim.integrators.pgm.qp);
# Ad (n, n) the first-order-only part of A's contact term (Eq. 7 less Eq. 10), kept by an exact-A
# evaluation of the zeroth-order forms' projection (zo 2) so that A - Ad is Eq. 10's A there.
PGM_FIELDS = (
    "q0", "v0", "th", "thn", "thb", "qp", "vel", "acc", "dn", "Pm", "G", "A", "LU", "piv", "dq", "gk", "g", "M", "sdp",
    "act", "cap", "Vt", "Dv", "T1", "T2", "Dn", "Dd", "Jc", "Bm", "Dm", "HX", "wts", "wn", "qb", "lo", "hi", "QA",
    "qw", "qinfo", "bstart", "btype", "bmu", "info", "stats", "Tq", "cface", "csig", "csc", "cpl", "Lq", "qc", "Ad",
)  # fmt: skip
# the options (not batched): F the tangent basis' up frame (3, 3), the wrench's k, zeta, mu, vx,
# margin; maxit, tol (|G|_inf bound), xtol, eta, depth (substep), zo, init (1: qp), maxstep, gamma0;
# npair the body-body candidate buffer's capacity (min(max_contacts, body-body points)); maxpen the
# depth past which a sub-step that drove a point there is halved (Scene.max_penetration; 0: never)
PGM_OPTIONS = (
    "F", "k", "zeta", "mu", "vx", "margin", "maxit", "tol", "xtol", "eta", "depth", "zo", "init", "maxstep", "gamma0",
    "npair", "maxpen",
)  # fmt: skip


def pgm_arrays(model, npts, B, vx, npair=0) -> dict:
    """The arrays of :data:`PGM_FIELDS` for ``B`` trajectories of ``model`` with ``npts`` scene
    contact points, ``npair`` body-body candidates at most and ``vx`` friction directions."""
    n = max(model.nv, 1)
    nq = max(model.nq, 1)
    P = max(int(npts) + int(npair), 1)
    B = max(int(B), 1)
    V = int(vx)
    MP = P * V
    z = np.zeros
    return dict(
        q0=z((B, nq)), v0=z((B, n)), th=z((B, nq)), thn=z((B, nq)), thb=z((B, nq)), qp=z((B, nq)), vel=z((B, n)),
        acc=z((B, n)), dn=z((B, n)), Pm=z((B, n, n)), G=z((B, n)), A=z((B, n, n)), LU=z((B, n, n)), piv=z((B, n), np.int64),
        dq=z((B, n)), gk=z((B, n)), g=z((B, n)), M=z((B, n, n)), sdp=z((B, P)), act=z((B, P), np.int64),
        cap=z((B, P)), Vt=z((B, P, V, 3)), Dv=z((B, P, V, 3, 3)), T1=z((B, 3, 3)), T2=z((B, 3, 3)), Dn=z((B, 3, 3)),
        Dd=z((B, 3, 3)), Jc=z((B, n, 12)), Bm=z((B, MP, n)), Dm=z((B, MP, n)), HX=z((B, MP, n)), wts=z((B, MP)),
        wn=z((B, MP)), qb=z((B, MP)), lo=z((B, MP)), hi=z((B, MP)), QA=z((B, MP, MP)),
        qw=z((B, *qp_work_as(MP, max(4 * n, 64) if npair == 0 else MP).shape)),
        qinfo=z((B, 4)), bstart=z((B, P + 1), np.int64), btype=np.full((B, P), QP_SIMPLEX, np.int64), bmu=z((B, P)),
        info=z((B, 4)), stats=z((B, NSTATS)), Tq=z((B, max(model.nb, 1), 3, 4)), cface=z((B, P), np.int64),
        csig=np.ones((B, P)), csc=z((B, P)), cpl=z((B, P, 7)), Lq=z((B, n, n)), qc=z(B), Ad=z((B, n, n)),
    )  # fmt: skip


def pgm_options(
    F, k, zeta, mu, vx, margin, maxit, tol, xtol, eta, depth, zo, init, maxstep, gamma0=1.0, npair=0, maxpen=0.0
) -> dict:
    """The option fields of :data:`PGM_OPTIONS`, typed as the kernels read them."""
    return dict(
        F=np.ascontiguousarray(F, dtype=np.float64), k=float(k), zeta=float(zeta), mu=float(mu), vx=int(vx),
        margin=float(margin), maxit=int(maxit), tol=float(tol), xtol=float(xtol), eta=float(eta), depth=int(depth),
        zo=int(zo), init=int(init), maxstep=float(maxstep), gamma0=float(gamma0), npair=int(npair),
        maxpen=float(maxpen),
    )  # fmt: skip


# ---------------------------------------------------------------------------------------------
# the form's hooks: placeholders, rebound by pbsim.jit.specialize (an unbound loop does
# not compile)


def pgm_prepare(m, s, c, w, sw, x, b, q0, v0, h, dt):
    """The sub-step's constants (from ``(q0, v0)``, step ``h`` of the frame step ``dt``) and the
    contact set into ``x.act``; returns its size (the package docstring)."""
    raise NotImplementedError("bind the PGM hooks with pbsim.jit.specialize")


def pgm_eval(m, s, c, w, x, b, q0, v0, th, h, wts, nc, deriv, first):
    """``x.G`` at ``(th, wts)``; with ``deriv`` ``x.A``, ``x.Bm``, ``x.cap``, ``x.g``, ``x.M``;
    returns K(th) (the package docstring)."""
    raise NotImplementedError("bind the PGM hooks with pbsim.jit.specialize")


# ---------------------------------------------------------------------------------------------
# the velocity of a configuration (both forms' K and G, Algorithm 2's carried thetadot)


@kernel
def pgm_velocity(m, w, x, b, q0, v0, th, h):
    """``x.vel = (th (-) q0) / h`` (free joints' linear part in the body frame at th),
    ``x.acc = (vel - v0) / h`` and the velocity map ``x.Pm = h d vel / d delta``."""
    nv = m.nv
    vel = x.vel[b]
    P = x.Pm[b]
    difference_config(m, q0, th, vel, w.Rj[b])
    for r in range(nv):
        for c in range(nv):
            P[r, c] = 0.0
        P[r, r] = 1.0
    for i in range(m.nb):
        jt = m.jtype[i]
        if jt != BALL and jt != FREE:
            continue
        j = m.iv[i]
        a = j if jt == BALL else j + 3
        tx, ty, tz = vel[a], vel[a + 1], vel[a + 2]
        th2 = tx * tx + ty * ty + tz * tz
        t = math.sqrt(th2)
        if t < 1e-6:
            kk = 1.0 / 12.0 + th2 / 720.0
        else:
            kk = 1.0 / th2 - (1.0 + math.cos(t)) / (2.0 * t * math.sin(t))
        # Jr^-1(phi) = I + 1/2 [phi]x + kk [phi]x^2,  [phi]x^2 = phi phi^T - |phi|^2 I
        P[a, a + 1] += -0.5 * tz
        P[a, a + 2] += 0.5 * ty
        P[a + 1, a] += 0.5 * tz
        P[a + 1, a + 2] += -0.5 * tx
        P[a + 2, a] += -0.5 * ty
        P[a + 2, a + 1] += 0.5 * tx
        for r in range(3):
            pr = tx if r == 0 else (ty if r == 1 else tz)
            for c in range(3):
                pc = tx if c == 0 else (ty if c == 1 else tz)
                P[a + r, a + c] += kk * (pr * pc - (th2 if r == c else 0.0))
        if jt == FREE:  # u = exp(phi)^T (R0^T (p1 - p0)) = R1^T (p1 - p0): du = d_lin + [u]x d_ang
            rotate_by_exp_transpose(tx, ty, tz, vel, j)
            ux, uy, uz = vel[j], vel[j + 1], vel[j + 2]
            P[j, a + 1] = -uz
            P[j, a + 2] = uy
            P[j + 1, a] = uz
            P[j + 1, a + 2] = -ux
            P[j + 2, a] = -uy
            P[j + 2, a + 1] = ux
    acc = x.acc[b]
    for j in range(nv):
        vel[j] /= h
        acc[j] = (vel[j] - v0[j]) / h
