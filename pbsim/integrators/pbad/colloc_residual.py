"""PBAD orders 3, 4: the collocation nodes and weights, and the residuals of Eq. 6 and their Jacobian, point forces included."""
from __future__ import annotations

import numpy as np

from pbsim.jit import kernel
from pbsim.contact.energy import V_REF, contact_force_velocity, eq9_velocity_law
from pbsim.contact.query import item_culled, item_face, pair_detect, pair_local
from pbsim.control.control import PD, SPD
from pbsim.dynamics.joints import difference_config
from pbsim.dynamics.equality import equality_penalty
from pbsim.dynamics.kinematics import fk_state
from pbsim.errors import InputError
from pbsim.dynamics.tendon import tendon_residual, tendon_residual_jacobian
from pbsim.integrators.pbad.joints import passive_residual, passive_residual_jacobian
from pbsim.integrators.pbad.pairs import pair_block_walk, pair_gradient_walk, pair_second_order_walk
from pbsim.integrators.pbad.energy import (adjoint_gradient, composite_moments, gn_block, point_pkp2,
                                           hessian_second_order, inertial_gravity_terms, point_xyz, poses_from_work,
                                           world_twists)

# ---------------------------------------------------------------------------------------------
# orders 3, 4: collocation residuals (Eq. 6) and their least squares (Eq. 7)

def collocation_nodes(K: int) -> np.ndarray:
    """Node times in units of dt relative to t_k: previous interior node, 0, alpha_1..alpha_{K-1}=1."""
    if K < 3:
        raise InputError(f"collocation order must be >= 3, got {K}")
    roots = np.polynomial.legendre.legroots([0] * (K - 2) + [1])  # L_{K-2}
    alphas = np.sort((roots + 1.0) / 2.0)
    return np.concatenate([[alphas[-1] - 1.0, 0.0], alphas, [1.0]])


def lagrange_derivatives(tau: np.ndarray):
    """C1[u, j] = L_j'(tau_u), C2[u, j] = L_j''(tau_u) for the Lagrange basis on nodes ``tau``."""
    n = len(tau)
    C1 = np.zeros((n, n))
    C2 = np.zeros((n, n))
    for j in range(n):
        y = np.zeros(n)
        y[j] = 1.0
        p = np.polynomial.polynomial.Polynomial.fit(tau, y, n - 1, domain=[-1, 1], window=[-1, 1])
        d1, d2 = p.deriv(1), p.deriv(2)
        C1[:, j] = d1(tau)
        C2[:, j] = d2(tau)
    return C1, C2


def linear_spectral_radius(K: int, wdt: float) -> float:
    """Spectral radius of one PBAD step on x'' = -w^2 x at w dt = ``wdt`` (a mode's energy is
    multiplied by its square per step): K = 2 is Eq. 4, (x_{k+1} - 2 x_k + x_{k-1}) / dt^2 =
    -w^2 x_{k+1}; K >= 3 is Eq. 6 at the unknown nodes, the map (previous node, x_k) -> (next
    step's previous node, x_{k+1})."""
    if K == 2:
        step = np.array([[0.0, 1.0], [-1.0, 2.0]]) / np.array([[1.0], [1.0 + wdt ** 2]])
        return float(max(abs(np.linalg.eigvals(step))))
    _, C2 = lagrange_derivatives(collocation_nodes(K))
    A = C2[2:, 2:] + wdt ** 2 * np.eye(K - 1)  # sum_j C2[u, j] x_j + (w dt)^2 x_u = 0 at u >= 2
    T = np.linalg.solve(A, -C2[2:, :2])
    return float(max(abs(np.linalg.eigvals(T[-2:]))))


@kernel
def colloc_point_velocity(T, i, pl, C1, u, dt):
    """World velocity at node u of body i's point ``pl`` from its Cartesian collocation polynomial:
    ``sum_j C1[u, j] x(T_j) / dt`` over all nodes (poses ``T`` (K+1, nb, 3, 4))."""
    v0 = 0.0
    v1 = 0.0
    v2 = 0.0
    for j in range(T.shape[0]):
        y0, y1, y2 = point_xyz(T[j], i, pl)
        cj = C1[u, j] / dt
        v0 += cj * y0
        v1 += cj * y1
        v2 += cj * y2
    return v0, v1, v2


@kernel
def add_point_force(G, i, pl, F):
    """G_i += F [pl; 1]^T: a world force (as dQ/dx) at body i's point ``pl`` into dE/dT_i."""
    for r in range(3):
        G[i, r, 0] += F[r] * pl[0]
        G[i, r, 1] += F[r] * pl[1]
        G[i, r, 2] += F[r] * pl[2]
        G[i, r, 3] += F[r]


@kernel
def colloc_point_block(m, i, pl, Tu, xiu, Tv, xiv, K, J, r0, c0, vel):
    """``J[r0 + a, c0 + c] += J_x(q_u)_a^T K J_x(q_v)_c`` over the DOFs a, c that move body ``i``
    (point ``pl``; poses and world twists at nodes u and v); ``vel`` (nv, 3) scratch."""
    x0, x1, x2 = point_xyz(Tu, i, pl)
    y0, y1, y2 = point_xyz(Tv, i, pl)
    j = i
    while j >= 0:
        jj = m.iv[j]
        for ka in range(m.nvj[j]):
            x = xiu[jj + ka]
            p0 = x[1] * x2 - x[2] * x1 + x[3]
            p1 = x[2] * x0 - x[0] * x2 + x[4]
            p2 = x[0] * x1 - x[1] * x0 + x[5]
            for cc in range(3):
                vel[jj + ka, cc] = p0 * K[0, cc] + p1 * K[1, cc] + p2 * K[2, cc]
        j = m.parent[j]
    jc = i
    while jc >= 0:
        jc0 = m.iv[jc]
        for kc in range(m.nvj[jc]):
            y = xiv[jc0 + kc]
            s0 = y[1] * y2 - y[2] * y1 + y[3]
            s1 = y[2] * y0 - y[0] * y2 + y[4]
            s2 = y[0] * y1 - y[1] * y0 + y[5]
            ja = i
            while ja >= 0:
                ja0 = m.iv[ja]
                for ka in range(m.nvj[ja]):
                    a = ja0 + ka
                    J[r0 + a, c0 + jc0 + kc] += vel[a, 0] * s0 + vel[a, 1] * s1 + vel[a, 2] * s2
                ja = m.parent[ja]
        jc = m.parent[jc]


@kernel
def drag_matrix(pm, Tk, k, dt, wv, K):
    """``K = wv (cn (I - a a^T) + ct a a^T)`` for drag point k, axis ``a`` at q_k (poses ``Tk``)."""
    i = pm.pt_body[k]
    pa = pm.pt_axis[k]
    cn = pm.drag_n[k]
    ct = pm.drag_t[k]
    a0 = Tk[i, 0, 0] * pa[0] + Tk[i, 0, 1] * pa[1] + Tk[i, 0, 2] * pa[2]
    a1 = Tk[i, 1, 0] * pa[0] + Tk[i, 1, 1] * pa[1] + Tk[i, 1, 2] * pa[2]
    a2 = Tk[i, 2, 0] * pa[0] + Tk[i, 2, 1] * pa[1] + Tk[i, 2, 2] * pa[2]
    for r in range(3):
        ar = a0 if r == 0 else (a1 if r == 1 else a2)
        for cc in range(3):
            ac = a0 if cc == 0 else (a1 if cc == 1 else a2)
            K[r, cc] = wv * ((cn if r == cc else 0.0) + (ct - cn) * ar * ac)


@kernel
def colloc_drag_forces(m, pm, pw, b, u, C1, dt, G):
    """Drag (Sec. 6.2) at node u: ``F = (cn (I - a a^T) + ct a a^T) v_u`` per drag point into G."""
    T = pw.T[b]
    for k in range(pm.npts):
        i = pm.pt_body[k]
        pl = pm.pt_local[k]
        v0, v1, v2 = colloc_point_velocity(T, i, pl, C1, u, dt)
        K = pw.K[b, k]
        F = pw.F[b, k]
        drag_matrix(pm, T[1], k, dt, 1.0, K)
        for r in range(3):
            F[r] = K[r, 0] * v0 + K[r, 1] * v1 + K[r, 2] * v2
        add_point_force(G, i, pl, F)


@kernel
def colloc_drag_jacobian(m, pm, pw, b, u, C1, dt, J):
    """Drag's Jacobian blocks of node u's rows: ``J_u^T (C1[u, v] / dt) Kd J_v`` for every unknown
    node v (exact: the force is linear in v_u, the axis is frozen at q_k)."""
    T = pw.T[b]
    nv = m.nv
    r0 = (u - 2) * nv
    for k in range(pm.npts):
        K = pw.K[b, k]
        for v2 in range(2, T.shape[0]):
            drag_matrix(pm, T[1], k, dt, C1[u, v2] / dt, K)
            colloc_point_block(m, pm.pt_body[k], pm.pt_local[k], T[u], pw.xi[b, u - 2], T[v2], pw.xi[b, v2 - 2], K,
                               J, r0, (v2 - 2) * nv, pw.vel[b])


@kernel
def colloc_contact_forces(m, pm, s, pw, b, u, C1, dt, G):
    """Penalty contact (Eq. 9) at node u: per contact point of the scene arrays ``s`` the force of
    :func:`pbsim.contact.energy.contact_force_velocity` at node u's pose with the polynomial's
    velocity v_u, into G (its F in ``pw.F[b, pm.npts + k]``)."""
    T = pw.T[b]
    Tu = T[u]
    k0 = pm.npts
    for k in range(s.npts):
        i = s.pt_body[k]
        pl = s.pt_local[k]
        v0, v1, v2 = colloc_point_velocity(T, i, pl, C1, u, dt)
        F = pw.F[b, k0 + k]
        dep = contact_force_velocity(s, k, pm.D1[k], pm.D2[k], pm.Cn[k], pm.friction_ev, Tu[i], Tu[i, :, 3], v0, v1,
                                     v2, dt, 0.0, 0.0, F, pw.K[b, k0 + k])
        if dep > 0.0:
            add_point_force(G, i, pl, F)


@kernel
def colloc_contact_jacobian(m, pm, s, pw, b, u, C1, dt, J):
    """Contact's Jacobian blocks of node u's rows: ``J_u^T (dF/dx [v = u] + C1[u, v] / dt dF/dv)
    J_v`` for every unknown node v (:func:`pbsim.contact.energy.contact_force_velocity`: exact
    with the normal locally constant)."""
    T = pw.T[b]
    Tu = T[u]
    nv = m.nv
    r0 = (u - 2) * nv
    k0 = pm.npts
    for k in range(s.npts):
        i = s.pt_body[k]
        pl = s.pt_local[k]
        v0, v1, v2 = colloc_point_velocity(T, i, pl, C1, u, dt)
        F = pw.F[b, k0 + k]
        K = pw.K[b, k0 + k]
        for v2n in range(2, T.shape[0]):
            dep = contact_force_velocity(s, k, pm.D1[k], pm.D2[k], pm.Cn[k], pm.friction_ev, Tu[i], Tu[i, :, 3], v0,
                                         v1, v2, dt, 1.0 if v2n == u else 0.0, C1[u, v2n] / dt, F, K)
            if dep <= 0.0:
                break
            colloc_point_block(m, i, pl, Tu, pw.xi[b, u - 2], T[v2n], pw.xi[b, v2n - 2], K, J, r0, (v2n - 2) * nv,
                               pw.vel[b])


@kernel
def pair_node_velocity(s, k, T, A, B, C1, u, dt):
    """World velocity at node u of body-body point ``k`` relative to B: the derivative of its
    position in B's frame, ``y_j = T_B(q_j)^-1 T_A(q_j) l`` over all nodes, rotated by B at node u
    (``R_B(u) sum_j C1[u, j] y_j / dt``)."""
    d0 = 0.0
    d1 = 0.0
    d2 = 0.0
    for j in range(T.shape[0]):
        _x, _y, _z, y0, y1, y2 = pair_local(s, k, T[j, A], T[j, A, :, 3], T[j, B], T[j, B, :, 3])
        cj = C1[u, j] / dt
        d0 += cj * y0
        d1 += cj * y1
        d2 += cj * y2
    R = T[u, B]
    return (R[0, 0] * d0 + R[0, 1] * d1 + R[0, 2] * d2, R[1, 0] * d0 + R[1, 1] * d1 + R[1, 2] * d2,
            R[2, 0] * d0 + R[2, 1] * d1 + R[2, 2] * d2)


@kernel
def colloc_pair_point(pm, s, k, T, A, B, face, C1, u, dt, wx, wv, F, K):
    """Eq. 9's force at node u for body-body point ``k`` (:func:`pbsim.contact.energy.eq9_velocity_law`,
    the point's own ``D1 = k / 2``, ``D2 = mu k / (2 v_ref)`` and, with ``pm.pair_cn``, its damping):
    the detection at node u's poses (box face ``face``), the velocity relative to B from the
    polynomial.  Returns ``(dep, x, y, z)``."""
    Tu = T[u]
    x0, x1, x2, dep, n0, n1, n2 = pair_detect(s, k, Tu[A], Tu[A, :, 3], Tu[B], Tu[B, :, 3], face)
    v0, v1, v2 = pair_node_velocity(s, k, T, A, B, C1, u, dt)
    kk = s.pp_k[k]
    dep = eq9_velocity_law(dep, n0, n1, n2, v0, v1, v2, 0.5 * kk, s.pp_mu[k] * kk / (2.0 * V_REF),
                           pm.pair_cn * s.pp_c[k], pm.friction_ev, dt, wx, wv, F, K)
    return dep, x0, x1, x2


@kernel
def colloc_pair_terms(m, pm, s, pw, b, u, C1, dt, want_j, ru, J):
    """Contact between bodies at node u: each body-body point's Eq. 9 force (:func:`colloc_pair_point`)
    added to the residual rows ``ru`` through the relative Jacobian (A's chain +, B's -; never into
    G: Algorithm 2 would contract B's side in the wrong order, :mod:`.pairs`), and with ``want_j``
    its Jacobian blocks: ``J_rel(u)^T (dF/dx [v = u] + C1[u, v] / dt dF/dv R_B(u) R_B(v)^T)
    J_rel(v)`` for every unknown node v (the velocity lives in B's frame, which turns between the
    nodes) and node u's second derivatives of ``J_rel^T F`` (F fixed in B's frame)."""
    T = pw.T[b]
    Tu = T[u]
    nv = m.nv
    r0 = (u - 2) * nv
    xiu = pw.xi[b, u - 2]
    F = pw.pF[b]
    K = pw.pK[b]
    Kv = pw.pK2[b]
    W = pw.pW[b]
    G = pw.pG[b]
    wr = pw.pr[b]
    for it in range(s.nitem):
        A = s.it_a[it]
        B = s.it_b[it]
        if item_culled(s, it, Tu[A], Tu[A, :, 3], Tu[B], Tu[B, :, 3], 0.0):
            continue
        face = item_face(s, it, Tu[A], Tu[A, :, 3], Tu[B], Tu[B, :, 3])
        lca = s.it_lca[it]
        active = False
        for r in range(6):
            wr[r] = 0.0
        for r in range(3):
            for cc in range(4):
                G[r, cc] = 0.0
        for k in range(s.it_start[it], s.it_start[it + 1]):
            dep, x0, x1, x2 = colloc_pair_point(pm, s, k, T, A, B, face, C1, u, dt, 0.0, 0.0, F, K)
            if dep <= 0.0:
                continue
            active = True
            wr[0] += x1 * F[2] - x2 * F[1]
            wr[1] += x2 * F[0] - x0 * F[2]
            wr[2] += x0 * F[1] - x1 * F[0]
            wr[3] += F[0]
            wr[4] += F[1]
            wr[5] += F[2]
            for r in range(3):
                G[r, 0] += F[r] * x0
                G[r, 1] += F[r] * x1
                G[r, 2] += F[r] * x2
                G[r, 3] += F[r]
        if not active:
            continue
        pair_gradient_walk(m, xiu, A, B, lca, wr, ru)
        if not want_j:
            continue
        pair_second_order_walk(m, xiu, A, B, lca, G, J, r0)
        for v in range(2, T.shape[0]):
            Tv = T[v]
            for r in range(6):
                for cc in range(6):
                    W[r, cc] = 0.0
            for k in range(s.it_start[it], s.it_start[it + 1]):
                dep, x0, x1, x2 = colloc_pair_point(pm, s, k, T, A, B, face, C1, u, dt, 1.0 if v == u else 0.0, 0.0,
                                                    F, K)
                if dep <= 0.0:
                    continue
                colloc_pair_point(pm, s, k, T, A, B, face, C1, u, dt, 0.0, C1[u, v] / dt, F, Kv)
                # K += Kv R_B(u) R_B(v)^T
                for r in range(3):
                    for cc in range(3):
                        acc = 0.0
                        for j in range(3):
                            rot = Tu[B, j, 0] * Tv[B, cc, 0] + Tu[B, j, 1] * Tv[B, cc, 1] + Tu[B, j, 2] * Tv[B, cc, 2]
                            acc += Kv[r, j] * rot
                        K[r, cc] += acc
                y0, y1, y2, _a, _b, _c = pair_local(s, k, Tv[A], Tv[A, :, 3], Tv[B], Tv[B, :, 3])
                point_pkp2(K, x0, x1, x2, y0, y1, y2, W)
            pair_block_walk(m, xiu, pw.xi[b, v - 2], A, B, lca, W, J, r0, (v - 2) * nv)


@kernel
def colloc_residual(m, s, pm, c, w, pw, b, nodes, C1, C2, dt, want_j, r, J):
    """Stacked residuals of Eq. 6 at the unknown nodes (rows nodes[2:]) and their Jacobian.

    Node configurations are in ``nodes`` (K+1, nq); the poses of the two known nodes must already
    be in pw.T[b, 0:2].  r[u*nv + a] is the generalized force residual of DOF a at node u + 2.
    Drag points of ``pm`` and contact points of the scene arrays ``s`` add their forces at every
    node (module docstring)."""
    nn = nodes.shape[0]
    nu = nn - 2
    nv = m.nv
    inv2 = 1.0 / (dt * dt)
    A = pw.A[b]
    G = pw.G[b]
    bt = b if c.tau.shape[0] > 1 else 0
    bp = b if c.kp.shape[0] > 1 else 0
    bd = b if c.kd.shape[0] > 1 else 0
    bq = b if c.q_ref.shape[0] > 1 else 0
    bv = b if c.v_ref.shape[0] > 1 else 0
    for u in range(2, nn):
        fk_state(m, w, b, nodes[u])
        poses_from_work(m, w, b, pw.T[b, u])
        world_twists(m, pw.T[b, u], pw.xi[b, u - 2])
    if want_j:
        for a in range(nu * nv):
            for cc in range(nu * nv):
                J[a, cc] = 0.0
    for u in range(2, nn):
        T = pw.T[b, u]
        xi = pw.xi[b, u - 2]
        ru = r[(u - 2) * nv:(u - 1) * nv]
        for i in range(m.nb):
            for rr in range(3):
                for cc in range(4):
                    sa = 0.0
                    for j in range(nn):
                        sa += C2[u, j] * pw.T[b, j, i, rr, cc]
                    A[i, rr, cc] = sa
        inertial_gravity_terms(m, pm, T, A, inv2, True, G)
        if pm.npts > 0:
            colloc_drag_forces(m, pm, pw, b, u, C1, dt, G)
        if s.npts > 0:
            colloc_contact_forces(m, pm, s, pw, b, u, C1, dt, G)
        adjoint_gradient(m, T, G, xi, pw.W[b], ru)
        if s.nitem > 0:  # contact between bodies (through the relative Jacobian, rows and blocks)
            colloc_pair_terms(m, pm, s, pw, b, u, C1, dt, False, ru, J)
        # joint-space forces at node u: velocity and acceleration from the polynomial (tangent at q_u)
        vel = pw.v1[b]
        acc = pw.v2[b]
        tmp = pw.v3[b]
        for a in range(nv):
            vel[a] = 0.0
            acc[a] = 0.0
        for j in range(nn):
            if j != u:
                difference_config(m, nodes[u], nodes[j], tmp, w.Rj[b])
                for a in range(nv):
                    vel[a] += C1[u, j] * tmp[a] / dt
                    acc[a] += C2[u, j] * tmp[a] * inv2
        for a in range(nv):
            kd = c.kd[bd, a] if (c.mode == PD or c.mode == SPD) else 0.0
            ru[a] += -c.tau[bt, a] + (m.damping[a] + kd) * vel[a] - kd * c.v_ref[bv, a] + m.armature[a] * acc[a]
        if c.mode == PD or c.mode == SPD:
            difference_config(m, c.q_ref[bq], nodes[u], tmp, w.Rj[b])
            for a in range(nv):
                ru[a] += c.kp[bp, a] * tmp[a]
        passive_residual(m, nodes[u], vel, ru)  # springs, dry friction, limits (joints.py)
        tendon_residual(m, c, b, nodes[u], vel, ru)  # fixed tendons (pbsim.dynamics.tendon)
        r0 = (u - 2) * nv
        if m.eq_type.shape[0] > 0:  # equality constraints: order 2's penalty force kc J^T phi at q_u, GN block kc J^T J
            equality_penalty(m, w, b, nodes[u], vel, dt, True, want_j, ru, J[r0:r0 + nv, r0:r0 + nv])
        if want_j:
            # diagonal block: Algorithm 2 (second derivatives, W from this node) + GN with weight C2[u,u]
            hessian_second_order(m, xi, pw.W[b], pw.H[b], False)
            for a in range(nv):
                for cc in range(nv):
                    J[r0 + a, r0 + cc] += pw.H[b, a, cc]
            for v2 in range(2, nn):
                c0 = (v2 - 2) * nv
                composite_moments(m, pm, T, pw.T[b, v2], C2[u, v2] * inv2, pw.C[b])
                gn_block(m, xi, pw.xi[b, v2 - 2], pw.C[b], J, r0, c0, True)
                for a in range(nv):
                    kd = c.kd[bd, a] if (c.mode == PD or c.mode == SPD) else 0.0
                    J[r0 + a, c0 + a] += (m.damping[a] + kd) * C1[u, v2] / dt + m.armature[a] * C2[u, v2] * inv2
                    if v2 == u and (c.mode == PD or c.mode == SPD):
                        J[r0 + a, c0 + a] += c.kp[bp, a]
                passive_residual_jacobian(m, nodes[u], vel, C1[u, v2] / dt, v2 == u, J, r0, c0)
                tendon_residual_jacobian(m, c, b, nodes[u], vel, C1[u, v2] / dt, v2 == u, J, r0, c0)
            if pm.npts > 0:
                colloc_drag_jacobian(m, pm, pw, b, u, C1, dt, J)
            if s.npts > 0:
                colloc_contact_jacobian(m, pm, s, pw, b, u, C1, dt, J)
            if s.nitem > 0:
                colloc_pair_terms(m, pm, s, pw, b, u, C1, dt, True, pw.v3[b], J)
