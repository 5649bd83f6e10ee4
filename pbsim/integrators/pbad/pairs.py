"""Contact between bodies in the position-based objectives (PBAD, PBFD, pbd_friction): the body-body
items of the scene (:mod:`pbsim.contact.pairs`) as terms of E, its gradient and Hessian, through the
relative Jacobian ``J_rel = J_A - J_B`` (notes/body_contact.md Sec. 3.3).

A point of body A at world ``x`` is queried in the frame of the shape's body B,
``y = T_B^-1 T_A l`` (:func:`pbsim.contact.query.pair_detect_step`: a point touching B's shape at
the start of the step keeps that contact plane, fixed in B's frame, for the step).  With
``xi_a = (w_a, u_a)`` the world twist of DOF ``a`` (:func:`world_twists`), ``P(x) xi = w x x + u``
the velocity of the world point x, and ``s_a = +1`` on the chain from A up to the lowest common
ancestor (LCA), ``-1`` on B's, ``0`` above (a common ancestor moves both alike):

    dE/dtheta_a = s_a xi_a . [x x F; F]                               (F = dE/dx, world)
    GN Hessian  H_ca += s_a s_c xi_c^T P^T K P xi_a                     (K = d2E/dx2 or dF/dx)
    2nd order (F fixed in B's frame):
        a, c on A's side, a an ancestor of c:   <hat(xi_a) hat(xi_c), F xbar^T>     (Algorithm 2)
        a, c on B's side, a an ancestor of c:   <hat(xi_c) hat(xi_a), F xbar^T>     (order reversed: T_B^-1)
        a on A's side, c on B's:               -<hat(xi_c) hat(xi_a), F xbar^T>

Inside one ball or free joint the angular-angular terms are symmetrised (as Algorithm 2); a free
joint's linear-linear terms are zero and its linear-angular ones are zero on A's side (``p += R
d_lin`` does not depend on ``d_ang``) but not on B's (``T_B^-1`` rotates the translation:
``<hat(xi_ang) hat(xi_lin), .>``).  These forces stay out of PBAD's per-body ``G``: Algorithm 2
contracts with the ancestor on the left, which is wrong on B's side.  Per item the point sums
``[x x F; F]`` (6), ``P^T K P`` (6x6) and ``F xbar^T`` (3x4) are gathered first, then one signed
chain walk each, so the cost per item is O(points + depth^2).

The contact law is a hook (``pair_law``, bound per method by :func:`pbsim.jit.specialize`):
PBAD's Eq. 9 (:func:`eq9_pair_law`), PBFD's force (:mod:`pbsim.integrators.pbfd.residual`).
"""
import math

from pbsim.jit import kernel
from pbsim.contact.energy import V_REF, contact_step_fraction, eq9_law
from pbsim.contact.query import item_culled, item_face, pair_detect, pair_detect_step
from pbsim.dynamics.joints import BALL, FREE
from pbsim.integrators.pbad.energy import hat2_dot, point_pkp


@kernel
def eq9_pair_law(pm, s, k, dep, n0, n1, n2, d0, d1, d2, m0, m1, m2, dt, F, K):
    """PBAD's Eq. 9 at body-body point ``k`` (:func:`pbsim.contact.energy.eq9_law`) with the
    environment's parameters ``D1 = k / 2``, ``D2 = mu k / (2 v_ref)`` from the point's stiffness
    and friction (:func:`pbsim.contact.energy.energy_parameters`)."""
    kk = s.pp_k[k]
    # the start-of-step depth: on the start's contact plane (pair_detect_step), sd = sd_k - n_k . Delta
    sk = dep + m0 * d0 + m1 * d1 + m2 * d2
    return eq9_law(dep, n0, n1, n2, d0, d1, d2, m0, m1, m2, 0.5 * kk, s.pp_mu[k] * kk / (2.0 * V_REF), dt, sk,
                   pm.friction_ev, F, K)


@kernel
def block_zero(K):
    """Whether the 3x3 ``K`` is all zero."""
    for r in range(3):
        for c in range(3):
            if K[r, c] != 0.0:
                return False
    return True


pair_law = eq9_pair_law  # the hook pair_terms calls (PBFD binds its own: pbsim.integrators.pbfd.residual)


@kernel
def pair_gradient_walk(m, xi, A, B, lca, wr, g):
    """``g_a += s_a xi_a . wr`` over the DOFs of A's and B's chains below ``lca`` (``wr = sum [x x
    F; F]``: the points' force wrench about the world origin)."""
    for side in range(2):
        i = A if side == 0 else B
        sg = 1.0 if side == 0 else -1.0
        while i != lca:
            j0 = m.iv[i]
            for k in range(m.nvj[i]):
                x = xi[j0 + k]
                g[j0 + k] += sg * (x[0] * wr[0] + x[1] * wr[1] + x[2] * wr[2] + x[3] * wr[3] + x[4] * wr[4]
                                   + x[5] * wr[5])
            i = m.parent[i]


@kernel
def pair_gn_walk(m, xi, A, B, lca, W, H, r0):
    """``H[c, a] += s_a s_c xi_c^T W xi_a`` for every two DOFs of A's and B's chains below ``lca``
    (``W = sum P^T K P``: :func:`pbsim.integrators.pbad.energy.point_pkp`)."""
    pair_block_walk(m, xi, xi, A, B, lca, W, H, r0, r0)


@kernel
def pair_block_walk(m, xr, xc, A, B, lca, W, H, r0, c0):
    """``H[r0 + c, c0 + a] += s_c s_a xr_c^T W xc_a`` for every two DOFs of A's and B's chains below
    ``lca``, the rows' twists ``xr`` and the columns' ``xc`` (two collocation nodes: ``W = sum
    P(x_u)^T K P(x_v)``, :func:`pbsim.integrators.pbad.energy.point_pkp2`)."""
    for sa_i in range(2):
        ia = A if sa_i == 0 else B
        sa = 1.0 if sa_i == 0 else -1.0
        while ia != lca:
            ja0 = m.iv[ia]
            for ka in range(m.nvj[ia]):
                a = ja0 + ka
                xa = xc[a]
                w0 = sa * (W[0, 0] * xa[0] + W[0, 1] * xa[1] + W[0, 2] * xa[2] + W[0, 3] * xa[3] + W[0, 4] * xa[4]
                           + W[0, 5] * xa[5])
                w1 = sa * (W[1, 0] * xa[0] + W[1, 1] * xa[1] + W[1, 2] * xa[2] + W[1, 3] * xa[3] + W[1, 4] * xa[4]
                           + W[1, 5] * xa[5])
                w2 = sa * (W[2, 0] * xa[0] + W[2, 1] * xa[1] + W[2, 2] * xa[2] + W[2, 3] * xa[3] + W[2, 4] * xa[4]
                           + W[2, 5] * xa[5])
                w3 = sa * (W[3, 0] * xa[0] + W[3, 1] * xa[1] + W[3, 2] * xa[2] + W[3, 3] * xa[3] + W[3, 4] * xa[4]
                           + W[3, 5] * xa[5])
                w4 = sa * (W[4, 0] * xa[0] + W[4, 1] * xa[1] + W[4, 2] * xa[2] + W[4, 3] * xa[3] + W[4, 4] * xa[4]
                           + W[4, 5] * xa[5])
                w5 = sa * (W[5, 0] * xa[0] + W[5, 1] * xa[1] + W[5, 2] * xa[2] + W[5, 3] * xa[3] + W[5, 4] * xa[4]
                           + W[5, 5] * xa[5])
                for sc_i in range(2):
                    ic = A if sc_i == 0 else B
                    sc = 1.0 if sc_i == 0 else -1.0
                    while ic != lca:
                        jc0 = m.iv[ic]
                        for kc in range(m.nvj[ic]):
                            x = xr[jc0 + kc]
                            H[r0 + jc0 + kc, c0 + a] += sc * (x[0] * w0 + x[1] * w1 + x[2] * w2 + x[3] * w3
                                                              + x[4] * w4 + x[5] * w5)
                        ic = m.parent[ic]
            ia = m.parent[ia]


@kernel
def pair_second_order_walk(m, xi, A, B, lca, W, H, r0):
    """The second derivatives of ``y = T_B^-1 T_A l`` contracted with the points' forces,
    ``W = sum F xbar^T`` (3x4), added to ``H`` (module docstring: signs and orders per side)."""
    # within one side: (a, c) with a an ancestor of c or both in one joint
    for side in range(2):
        i = A if side == 0 else B
        while i != lca:
            jt = m.jtype[i]
            j0 = m.iv[i]
            nvi = m.nvj[i]
            for ka in range(nvi):
                for kb in range(ka, nvi):
                    a = j0 + ka
                    c = j0 + kb
                    if jt == FREE and ka < 3 and kb < 3:
                        v = 0.0
                    elif jt == FREE and ka < 3:  # linear a, angular c
                        v = 0.0 if side == 0 else hat2_dot(xi[c], xi[a], W)
                    elif jt == BALL or jt == FREE:
                        v = 0.5 * (hat2_dot(xi[a], xi[c], W) + hat2_dot(xi[c], xi[a], W))
                    else:
                        v = hat2_dot(xi[a], xi[c], W)
                    H[r0 + a, r0 + c] += v
                    if c != a:
                        H[r0 + c, r0 + a] += v
            anc = m.parent[i]
            while anc != lca:
                ja = m.iv[anc]
                for ka in range(m.nvj[anc]):
                    for kb in range(nvi):
                        a = ja + ka
                        c = j0 + kb
                        v = hat2_dot(xi[a], xi[c], W) if side == 0 else hat2_dot(xi[c], xi[a], W)
                        H[r0 + a, r0 + c] += v
                        H[r0 + c, r0 + a] += v
                anc = m.parent[anc]
            i = m.parent[i]
    # across: a on A's side, c on B's side
    ia = A
    while ia != lca:
        ja = m.iv[ia]
        for ka in range(m.nvj[ia]):
            a = ja + ka
            ic = B
            while ic != lca:
                jc = m.iv[ic]
                for kc in range(m.nvj[ic]):
                    c = jc + kc
                    v = -hat2_dot(xi[c], xi[a], W)
                    H[r0 + a, r0 + c] += v
                    H[r0 + c, r0 + a] += v
                ic = m.parent[ic]
        ia = m.parent[ia]


@kernel
def pair_terms(m, pm, s, T, Tk, xi, dt, want_g, want_h, exact_h, g, H, pF, pK, pW, pG, pr):
    """The body-body items' contact energy (the ``pair_law`` hook, module docstring) at the poses
    ``T`` for a step from the poses ``Tk``; with ``want_g`` adds its gradient to ``g``, with
    ``want_h`` its Gauss-Newton Hessian to ``H`` (and, with ``exact_h``, the second-order part).
    ``xi``: the world twists at ``T`` (read only with ``want_g``).  Scratch: ``pF`` (3,), ``pK``
    (3, 3), ``pW`` (6, 6), ``pG`` (3, 4), ``pr`` (6,).  Returns the energy."""
    e = 0.0
    for it in range(s.nitem):
        A = s.it_a[it]
        B = s.it_b[it]
        RA, pA, RB, pB = T[A], T[A, :, 3], T[B], T[B, :, 3]
        if item_culled(s, it, RA, pA, RB, pB, 0.0):
            continue
        active = False
        face = item_face(s, it, Tk[A], Tk[A, :, 3], Tk[B], Tk[B, :, 3])  # chosen at the step's start
        for k in range(s.it_start[it], s.it_start[it + 1]):
            x0, x1, x2, dep, n0, n1, n2, d0, d1, d2, m0, m1, m2 = pair_detect_step(
                s, k, RA, pA, RB, pB, Tk[A], Tk[A, :, 3], Tk[B], Tk[B, :, 3], face)
            if dep <= 0.0 and dep + m0 * d0 + m1 * d1 + m2 * d2 <= 0.0:
                continue  # out of contact now and at the start (a lagged friction acts if it touched then)
            e += pair_law(pm, s, k, dep, n0, n1, n2, d0, d1, d2, m0, m1, m2, dt, pF, pK)
            if not want_g or (dep <= 0.0 and block_zero(pK)):
                continue  # out of contact, no lagged friction (Eq. 9, PBFD): no chain walks with zeros
            if not active:
                active = True
                for r in range(6):
                    pr[r] = 0.0
                    for c in range(6):
                        pW[r, c] = 0.0
                for r in range(3):
                    for c in range(4):
                        pG[r, c] = 0.0
            pr[0] += x1 * pF[2] - x2 * pF[1]
            pr[1] += x2 * pF[0] - x0 * pF[2]
            pr[2] += x0 * pF[1] - x1 * pF[0]
            pr[3] += pF[0]
            pr[4] += pF[1]
            pr[5] += pF[2]
            if want_h:
                point_pkp(pK, x0, x1, x2, pW)
                if exact_h:
                    for r in range(3):
                        pG[r, 0] += pF[r] * x0
                        pG[r, 1] += pF[r] * x1
                        pG[r, 2] += pF[r] * x2
                        pG[r, 3] += pF[r]
        if active:
            lca = s.it_lca[it]
            pair_gradient_walk(m, xi, A, B, lca, pr, g)
            if want_h:
                pair_gn_walk(m, xi, A, B, lca, pW, H, 0)
                if exact_h:
                    pair_second_order_walk(m, xi, A, B, lca, pG, H, 0)
    return e


@kernel
def relative_twist(m, xi, A, B, lca, dx):
    """The twist ``(w, u)`` of A relative to B along the tangent step ``dx``: ``sum_a s_a xi_a dx_a``
    over both chains below ``lca``; a world point x moving with A moves relative to B by
    ``w x x + u``."""
    w0 = 0.0
    w1 = 0.0
    w2 = 0.0
    u0 = 0.0
    u1 = 0.0
    u2 = 0.0
    for side in range(2):
        j = A if side == 0 else B
        sg = 1.0 if side == 0 else -1.0
        while j != lca:
            jj = m.iv[j]
            for a in range(m.nvj[j]):
                x = xi[jj + a]
                sa = sg * dx[jj + a]
                w0 += x[0] * sa
                w1 += x[1] * sa
                w2 += x[2] * sa
                u0 += x[3] * sa
                u1 += x[4] * sa
                u2 += x[5] * sa
            j = m.parent[j]
    return w0, w1, w2, u0, u1, u2


@kernel
def pair_step_limit(m, s, T, xi, dx, frac):
    """:func:`pbsim.integrators.pbad.energy.contact_step_limit` for the body-body items: the
    largest ``alpha`` in (0, 1] such that no point outside the shape it faces sinks, along the
    linearised relative motion ``alpha dx``, deeper than ``frac`` times what the full step
    predicts.  The broadphase is swept: an item is skipped only when its bounding spheres stay
    apart by more than their linearised relative motion along ``dx`` (the motion of A's sphere
    centre plus the rotation times both radii), so a step cannot tunnel through a thin shape."""
    alpha = 1.0
    for it in range(s.nitem):
        A = s.it_a[it]
        B = s.it_b[it]
        RA, pA, RB, pB = T[A], T[A, :, 3], T[B], T[B, :, 3]
        w0, w1, w2, u0, u1, u2 = relative_twist(m, xi, A, B, s.it_lca[it], dx)
        c = s.it_sphere[it]
        cx = pA[0] + RA[0, 0] * c[0] + RA[0, 1] * c[1] + RA[0, 2] * c[2]
        cy = pA[1] + RA[1, 0] * c[0] + RA[1, 1] * c[1] + RA[1, 2] * c[2]
        cz = pA[2] + RA[2, 0] * c[0] + RA[2, 1] * c[1] + RA[2, 2] * c[2]
        v0 = w1 * cz - w2 * cy + u0
        v1 = w2 * cx - w0 * cz + u1
        v2 = w0 * cy - w1 * cx + u2
        sweep = math.sqrt(v0 * v0 + v1 * v1 + v2 * v2) + math.sqrt(w0 * w0 + w1 * w1 + w2 * w2) * (c[3] + c[7])
        if item_culled(s, it, RA, pA, RB, pB, sweep):
            continue
        face = item_face(s, it, RA, pA, RB, pB)
        for k in range(s.it_start[it], s.it_start[it + 1]):
            x0, x1, x2, dep0, n0, n1, n2 = pair_detect(s, k, RA, pA, RB, pB, face)
            if dep0 > 0.0:
                continue
            p0 = w1 * x2 - w2 * x1 + u0
            p1 = w2 * x0 - w0 * x2 + u1
            p2 = w0 * x1 - w1 * x0 + u2
            a = contact_step_fraction(dep0, n0 * p0 + n1 * p1 + n2 * p2, frac)
            if a < alpha:
                alpha = a
    return alpha
