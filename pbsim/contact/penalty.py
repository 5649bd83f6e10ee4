"""Penalty contact as generalized forces, for the explicit (baseline) integrators.

Per contact point with depth d > 0, normal n, contact-point velocity u (world):
  normal   f_n = max(0, k d - c (n . u))                       (spring-damper on d)
  friction f_t = -mu f_n u_t / sqrt(|u_t|^2 + eps^2)            (regularized Coulomb, u_t = u - (n.u) n)
applied at the deepest point ``x - r n`` of the point's sphere; ``tau += J_lin^T (f_n n + f_t)``.
"""
import math

from pbsim.backends.kernel import kernel
from pbsim.contact.query import contact_detect, point_force_jt


@kernel
def contact_generalized_forces(m, s, w, b, q, v, tau):
    """Add the contact forces' generalized force J^T f to ``tau`` (nv,).

    Expects ``velocity_pass`` and ``world_pass`` done for state b."""
    for k in range(s.npts):
        body = s.pt_body[k]
        R = w.Rw[b, body]
        pw = w.pw[b, body]
        x, y, z, d, nx, ny, nz = contact_detect(s, k, R, pw)  # the one detection (query.py)
        if d <= 0.0:
            continue
        r = s.pt_radius[k]
        cx, cy, cz = x - r * nx, y - r * ny, z - r * nz  # contact point on the robot's surface
        vel = w.vel[b, body]  # [omega; v] of the body in body coordinates
        lx = R[0, 0] * (cx - pw[0]) + R[1, 0] * (cy - pw[1]) + R[2, 0] * (cz - pw[2])
        ly = R[0, 1] * (cx - pw[0]) + R[1, 1] * (cy - pw[1]) + R[2, 1] * (cz - pw[2])
        lz = R[0, 2] * (cx - pw[0]) + R[1, 2] * (cy - pw[1]) + R[2, 2] * (cz - pw[2])
        ubx = vel[3] + vel[1] * lz - vel[2] * ly
        uby = vel[4] + vel[2] * lx - vel[0] * lz
        ubz = vel[5] + vel[0] * ly - vel[1] * lx
        ux = R[0, 0] * ubx + R[0, 1] * uby + R[0, 2] * ubz
        uy = R[1, 0] * ubx + R[1, 1] * uby + R[1, 2] * ubz
        uz = R[2, 0] * ubx + R[2, 1] * uby + R[2, 2] * ubz
        un = nx * ux + ny * uy + nz * uz
        fn = s.pt_k[k] * d - s.pt_c[k] * un  # paper 000 Eq. 9 style spring-damper on the depth
        if fn <= 0.0:
            continue
        tx, ty, tz = ux - un * nx, uy - un * ny, uz - un * nz
        sc = -s.mu * fn / math.sqrt(tx * tx + ty * ty + tz * tz + s.friction_eps * s.friction_eps)
        point_force_jt(m, w, b, body, cx, cy, cz, fn * nx + sc * tx, fn * ny + sc * ty, fn * nz + sc * tz, tau)
