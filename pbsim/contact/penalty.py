"""Penalty contact as generalized forces, for the explicit (baseline) integrators.

Per contact point with depth d > 0, normal n, contact-point velocity u (world; between two bodies
the velocity of the point on A relative to the same point moving with B):
  normal   f_n = max(0, k d - c (n . u))                       (spring-damper on d)
  friction f_t = -mu f_n u_t / sqrt(|u_t|^2 + eps^2)            (regularized Coulomb, u_t = u - (n.u) n)
applied at the deepest point ``x - r n`` of the point's sphere; ``tau += J_lin^T (f_n n + f_t)``
(between bodies ``(J_A - J_B)^T``: the reaction acts on B).
"""
import math

from pbsim.jit import kernel
from pbsim.contact.query import contact_detect, item_culled, item_face, pair_detect, pair_force_jt, point_force_jt


@kernel
def body_point_velocity(w, b, body, cx, cy, cz):
    """World velocity of the world point c moving with ``body`` (``velocity_pass`` and
    ``world_pass`` done for state b)."""
    R = w.Rw[b, body]
    pw = w.pw[b, body]
    vel = w.vel[b, body]  # [omega; v] of the body in body coordinates
    lx = R[0, 0] * (cx - pw[0]) + R[1, 0] * (cy - pw[1]) + R[2, 0] * (cz - pw[2])
    ly = R[0, 1] * (cx - pw[0]) + R[1, 1] * (cy - pw[1]) + R[2, 1] * (cz - pw[2])
    lz = R[0, 2] * (cx - pw[0]) + R[1, 2] * (cy - pw[1]) + R[2, 2] * (cz - pw[2])
    ubx = vel[3] + vel[1] * lz - vel[2] * ly
    uby = vel[4] + vel[2] * lx - vel[0] * lz
    ubz = vel[5] + vel[0] * ly - vel[1] * lx
    return (R[0, 0] * ubx + R[0, 1] * uby + R[0, 2] * ubz, R[1, 0] * ubx + R[1, 1] * uby + R[1, 2] * ubz,
            R[2, 0] * ubx + R[2, 1] * uby + R[2, 2] * ubz)


@kernel
def penalty_force(k, c, mu, eps, d, nx, ny, nz, ux, uy, uz):
    """The penalty law (module docstring): the world force ``(fx, fy, fz)`` on the point, and
    whether it acts (False when the damper would pull)."""
    un = nx * ux + ny * uy + nz * uz
    fn = k * d - c * un  # paper 000 Eq. 9 style spring-damper on the depth
    if fn <= 0.0:
        return 0.0, 0.0, 0.0, False
    tx, ty, tz = ux - un * nx, uy - un * ny, uz - un * nz
    sc = -mu * fn / math.sqrt(tx * tx + ty * ty + tz * tz + eps * eps)
    return fn * nx + sc * tx, fn * ny + sc * ty, fn * nz + sc * tz, True


@kernel
def contact_generalized_forces(m, s, w, b, q, v, tau):
    """Add the contact forces' generalized force J^T f to ``tau`` (nv,).

    Expects ``velocity_pass`` and ``world_pass`` done for state b."""
    for k in range(s.npts):
        body = s.pt_body[k]
        x, y, z, d, nx, ny, nz = contact_detect(s, k, w.Rw[b, body], w.pw[b, body])  # the one detection (query.py)
        if d <= 0.0:
            continue
        r = s.pt_radius[k]
        cx, cy, cz = x - r * nx, y - r * ny, z - r * nz  # contact point on the robot's surface
        ux, uy, uz = body_point_velocity(w, b, body, cx, cy, cz)
        fx, fy, fz, on = penalty_force(s.pt_k[k], s.pt_c[k], s.mu, s.friction_eps, d, nx, ny, nz, ux, uy, uz)
        if on:
            point_force_jt(m, w, b, body, cx, cy, cz, fx, fy, fz, tau)


@kernel
def pair_generalized_forces(m, s, w, b, q, v, tau):
    """:func:`contact_generalized_forces` between bodies: every body-body item's points
    (:mod:`pbsim.contact.pairs`) against its shape, the force on A and its reaction on B."""
    for it in range(s.nitem):
        A = s.it_a[it]
        B = s.it_b[it]
        RA, pA, RB, pB = w.Rw[b, A], w.pw[b, A], w.Rw[b, B], w.pw[b, B]
        if item_culled(s, it, RA, pA, RB, pB, 0.0):
            continue
        face = item_face(s, it, RA, pA, RB, pB)
        for k in range(s.it_start[it], s.it_start[it + 1]):
            x, y, z, d, nx, ny, nz = pair_detect(s, k, RA, pA, RB, pB, face)
            if d <= 0.0:
                continue
            r = s.pp_radius[k]
            cx, cy, cz = x - r * nx, y - r * ny, z - r * nz
            ax, ay, az = body_point_velocity(w, b, A, cx, cy, cz)
            bx, by, bz = body_point_velocity(w, b, B, cx, cy, cz)
            fx, fy, fz, on = penalty_force(s.pp_k[k], s.pp_c[k], s.pp_mu[k], s.friction_eps, d, nx, ny, nz,
                                           ax - bx, ay - by, az - bz)
            if on:
                pair_force_jt(m, w, b, A, B, s.it_lca[it], cx, cy, cz, fx, fy, fz, tau)
