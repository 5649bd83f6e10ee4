"""NMDP's contact wrench model (paper 002, Eq. 5 and Remarks 6-7; notes/pbfd_nmdp.md B1, B5 items
4 and 8): per contact point a polytope of feasible forces ``f_x = v_x w_x``, ``w_x >= 0``,
``1^T w_x <= 1``, whose vertices are

    v_x^i(theta) = (k d^3 + zeta) (n + mu t^i),     i = 0 .. V-1,

a Coulomb pyramid with ``V`` edges capped at the normal force ``k d^3 + zeta`` (the *capacity*).
``d = max(0, r - phi(x))`` is the point's depth and ``n = grad phi(x)`` the environment normal,
both from the contact layer's one detection (:func:`pbsim.contact.query.contact_detect`, every
environment shape), at the point's world position ``x(theta)`` (its sphere's centre).  A sibling
of :mod:`.penalty`, :mod:`.energy` and :mod:`.pbfd`.

**Capacity** (note B5 item 4).  ``k`` [N/m^3] scales the cubic model; its default is
:func:`pbsim.contact.pbfd.normal_scale` with exponent 3, ``k = M g / (4 delta_ref^3)``: four points
carry the robot's weight at the scene's reference depth (5 mm).  ``zeta`` is in **newtons** (not
the paper's ``k (d^3 + zeta)``, which at a stiff ``k`` reaches kilonewtons at points nowhere near
contact) and is given only to the points of the step's *candidate set* (``cand``); the paper's
Remark 7 motivation (``grad_w G`` keeps its rank as a point touches down) holds inside that band.
Its default in the integrators is ``1e-3 k delta_ref^3``: a thousandth of a point's share of the
weight, the capacity the cube gives at a depth of ``0.1 delta_ref``.  The *candidate set* is
chosen by the integrator and fixed within a step (the paper's stated limitation; note B5 item 8).

**Tangent directions.**  ``t^i = cos(phi_i) t1(n) + sin(phi_i) t2(n)``, ``phi_i = 2 pi i / V``,
with ``(t1, t2)`` a *smooth* orthonormal basis of the plane normal to ``n``: the images of the up
frame's first two axes under the minimal rotation taking ``up`` to ``n`` (Rodrigues; the basis of
Frisvad 2012 / Duff et al. 2017).  In the up frame ``F = [e1 e2 up]`` (``F`` from the model's
gravity: :func:`tangent_frame`; world x, y, z for a z-up model), with ``m = F^T n`` and
``a = 1 / (1 + m_z)``::

    t1 = F (1 - a m_x^2,  -a m_x m_y,  -m_x)
    t2 = F (-a m_x m_y,  1 - a m_y^2,  -m_y)

These are rational functions of ``n``, smooth everywhere except at ``n = -up`` (``1 + m_z = 0``: a
surface whose outward normal points straight down, a ceiling touched from below), where no smooth
basis can be continued (hairy ball); there (``1 + m_z < 1e-12``) the basis is ``F e1, -F e2`` with
a zero derivative.  ``t1 x t2 = n``.  On a plane tilted about the up frame's e2 axis, ``t1`` is the
up-slope direction, so ``V = 4`` gives the directions aligned with the slope (+-up-slope, +-across).

**Derivative** (what a first-order NMDP needs, note B1)::

    dv^i/dx = 3 k d^2 (n + mu t^i) (dd/dx)^T + (k d^3 + zeta) (I + mu dt^i/dn) dn/dx,
    dd/dx = -n,  dv^i/dtheta = (dv^i/dx) J_lin(x)

(``dd/dtheta = -J_lin^T n``; ``J_lin``: the point's linear Jacobian in pbsim's tangent
coordinates).  What is differentiated: ``dd/dx = -grad phi = -n`` (exact where ``d > 0`` on every
shape, the detection's convention; on a heightfield ``phi`` is the vertical height over the normal
length, whose gradient is ``n`` only approximately), and ``dn/dx`` = the environment's curvature
(:func:`env_normal_jacobian`): zero on planes and inside boxes (a face), ``(I - n n^T)/rho`` on
spheres and capsules and outside box edges/corners.  **Heightfields and mesh terrain (the SDF grid)
are not differentiated: their normal is frozen, dn/dx = 0**, as the contact layer's other
derivative users do (architecture.md); on a flat heightfield cell or mesh face that is exact.  At
``d = 0`` the first term vanishes (the cube is C^2 there); a point outside the candidate set has
``v = 0`` and ``dv = 0``.

**Between bodies** (notes/body_contact.md Sec. 3.4): a body-body point (:mod:`pbsim.contact.pairs`)
on body A against the shape of body B has the same vertices with its normal ``n`` out of B (queried
in B's frame), its own ``mu`` (``s.pp_mu``) and the tangent basis of ``sigma n`` (:func:`pair_basis`:
``sigma = sign(n . up)`` fixed for the step, smooth at ``n = -up``); :func:`nmdp_pair_point` gives
them with ``dv^i/dn`` at a fixed depth and B's curvature (:func:`shape_normal_jacobian`, or the
step's frozen contact plane against boxes, cylinders and hulls: :func:`pair_plane`).  The integrator
(:mod:`pbsim.integrators.pgm.contact`) composes them with the relative motion of A and B.
"""

import math

import numpy as np

from pbsim.jit import kernel
from pbsim.contact.query import BIG, contact_detect, env_sdf, face_sdf, pair_detect, pair_local, sdf_box
from pbsim.errors import InputError

BASIS_EPS = 1e-12  # 1 + m_z below this: n = -up, the basis' singular point (module docstring)


def tangent_frame(model) -> np.ndarray:
    """The up frame ``F`` (3, 3) (columns e1, e2, up; ``up = -gravity / |gravity|``, world z when
    there is no gravity) whose minimal rotation onto ``n`` gives the tangent basis."""
    from pbsim.contact import up_rotation

    return np.ascontiguousarray(up_rotation(model), dtype=np.float64)


def default_k(model, delta_ref: float) -> float:
    """The default ``k = M g / (4 delta_ref^3)`` [N/m^3] (four points carry the weight at
    ``delta_ref``: :func:`pbsim.contact.pbfd.normal_scale` with exponent 3)."""
    from pbsim.contact.pbfd import normal_scale

    return normal_scale(model, delta_ref, 3.0)


def check_wrench_parameters(where: str, mu, k, zeta, vx):
    """InputError (naming ``where`` and the value) unless ``mu >= 0``, ``k > 0``, ``zeta >= 0`` are
    finite numbers and ``vx >= 3`` an integer (fewer directions do not span the tangent plane)."""
    for nm, val, lo, strict in (("mu", mu, 0.0, False), ("k", k, 0.0, True), ("zeta", zeta, 0.0, False)):
        try:
            f = float(val)
        except (TypeError, ValueError):
            raise InputError(f"{where}: {nm} must be a finite number, got {val!r}") from None
        if not math.isfinite(f) or f < lo or (strict and f == lo):
            rel = ">" if strict else ">="
            src = " (the scene's friction coefficient)" if nm == "mu" else ""
            raise InputError(f"{where}: {nm}{src} must be a finite number {rel} {lo:g}, got {val!r}")
    if isinstance(vx, bool) or not isinstance(vx, (int, np.integer)) or int(vx) < 3:
        raise InputError(f"{where}: vx (friction directions per contact point) must be an integer >= 3, got {vx!r}")


@kernel
def vertex_angle(i, nvert):
    """``(cos, sin)`` of vertex i's angle ``2 pi i / nvert`` in the tangent plane: exact at the
    quarter turns (the default 4-sided pyramid takes no transcendental call, and its opposite
    vertices cancel exactly)."""
    q = 4 * i
    if q % nvert == 0:
        k = (q // nvert) % 4
        if k == 0:
            return 1.0, 0.0
        if k == 1:
            return 0.0, 1.0
        if k == 2:
            return -1.0, 0.0
        return 0.0, -1.0
    ph = 2.0 * math.pi * i / nvert
    return math.cos(ph), math.sin(ph)


@kernel
def nmdp_basis(F, nx, ny, nz):
    """The smooth tangent basis ``(t1, t2)`` of ``n`` (module docstring), world coordinates."""
    mx = F[0, 0] * nx + F[1, 0] * ny + F[2, 0] * nz  # m = F^T n
    my = F[0, 1] * nx + F[1, 1] * ny + F[2, 1] * nz
    mz = F[0, 2] * nx + F[1, 2] * ny + F[2, 2] * nz
    if 1.0 + mz < BASIS_EPS:
        b0, b1, b2, c0, c1, c2 = 1.0, 0.0, 0.0, 0.0, -1.0, 0.0
    else:
        a = 1.0 / (1.0 + mz)
        b0, b1, b2 = 1.0 - a * mx * mx, -a * mx * my, -mx
        c0, c1, c2 = -a * mx * my, 1.0 - a * my * my, -my
    t1x = F[0, 0] * b0 + F[0, 1] * b1 + F[0, 2] * b2
    t1y = F[1, 0] * b0 + F[1, 1] * b1 + F[1, 2] * b2
    t1z = F[2, 0] * b0 + F[2, 1] * b1 + F[2, 2] * b2
    t2x = F[0, 0] * c0 + F[0, 1] * c1 + F[0, 2] * c2
    t2y = F[1, 0] * c0 + F[1, 1] * c1 + F[1, 2] * c2
    t2z = F[2, 0] * c0 + F[2, 1] * c1 + F[2, 2] * c2
    return t1x, t1y, t1z, t2x, t2y, t2z


@kernel
def nmdp_basis_jacobian(F, nx, ny, nz, T1, T2):
    """``T1 = dt1/dn``, ``T2 = dt2/dn`` (3, 3 each, world coordinates) of :func:`nmdp_basis` (the
    Jacobian of its rational formulas; along unit-sphere tangents it is the basis' derivative).
    Zero at the singular point."""
    mx = F[0, 0] * nx + F[1, 0] * ny + F[2, 0] * nz
    my = F[0, 1] * nx + F[1, 1] * ny + F[2, 1] * nz
    mz = F[0, 2] * nx + F[1, 2] * ny + F[2, 2] * nz
    for r in range(3):
        for c in range(3):
            T1[r, c] = 0.0
            T2[r, c] = 0.0
    if 1.0 + mz < BASIS_EPS:
        return
    a = 1.0 / (1.0 + mz)
    a2 = a * a
    # the local Jacobians db/dm (rows: b components, columns: m_x, m_y, m_z), then F (.) F^T
    for r in range(3):
        for c in range(3):
            s1 = 0.0
            s2 = 0.0
            for i in range(3):
                for j in range(3):
                    if i == 0:
                        d1 = -2.0 * a * mx if j == 0 else (0.0 if j == 1 else a2 * mx * mx)
                        d2 = -a * my if j == 0 else (-a * mx if j == 1 else a2 * mx * my)
                    elif i == 1:
                        d1 = -a * my if j == 0 else (-a * mx if j == 1 else a2 * mx * my)
                        d2 = 0.0 if j == 0 else (-2.0 * a * my if j == 1 else a2 * my * my)
                    else:
                        d1 = -1.0 if j == 0 else 0.0
                        d2 = -1.0 if j == 1 else 0.0
                    f = F[r, i] * F[c, j]
                    s1 += f * d1
                    s2 += f * d2
            T1[r, c] = s1
            T2[r, c] = s2


@kernel
def nmdp_direction(F, mu, nx, ny, nz, i, nvert):
    """``n + mu t^i`` (unscaled vertex ``i`` of ``nvert``)."""
    t1x, t1y, t1z, t2x, t2y, t2z = nmdp_basis(F, nx, ny, nz)
    ca, sa = vertex_angle(i, nvert)
    return (nx + mu * (ca * t1x + sa * t2x), ny + mu * (ca * t1y + sa * t2y), nz + mu * (ca * t1z + sa * t2z))


@kernel
def nmdp_capacity(k, zeta, sd, cand):
    """``k d^3 + zeta`` with ``d = max(0, sd)`` for a candidate point (``cand``), else 0."""
    if not cand:
        return 0.0
    d = sd if sd > 0.0 else 0.0
    return k * d * d * d + zeta


@kernel
def env_normal_jacobian(s, x, y, z, mask, out):
    """``out`` (3, 3) = ``dn/dx`` of the environment normal at world point ``x`` (the shape
    :func:`pbsim.contact.query.env_sdf` picks among those ``mask`` lets in): zero on planes, inside
    boxes, on heightfields and mesh terrain (frozen: not differentiated); ``(I - n n^T) P / rho`` on
    spheres, capsules and outside box edges/corners (``rho``: the distance to the nearest point of
    the shape's core, ``P``: the projector onto the directions that move it)."""
    for r in range(3):
        for c in range(3):
            out[r, c] = 0.0
    best = BIG
    kind = 0  # 0: flat or frozen, 1: sphere-like (out = (I - n n^T)/rho), 2: capsule side, 3: box exterior
    ex, ey, ez, rho = 0.0, 0.0, 0.0, 1.0
    bi = -1
    ie = 0
    for i in range(s.env_plane.shape[0]):
        if (mask[ie >> 6] >> (ie & 63)) & 1:
            r = s.env_plane[i]
            phi = r[0] * x + r[1] * y + r[2] * z - r[3]
            if phi < best:
                best, kind = phi, 0
        ie += 1
    for i in range(s.env_sphere.shape[0]):
        if (mask[ie >> 6] >> (ie & 63)) & 1:
            r = s.env_sphere[i]
            dx, dy, dz = x - r[0], y - r[1], z - r[2]
            rr = math.sqrt(dx * dx + dy * dy + dz * dz)
            phi = rr - r[3]
            if phi < best:
                best, kind, rho = phi, 1, rr
        ie += 1
    for i in range(s.env_box.shape[0]):
        if (mask[ie >> 6] >> (ie & 63)) & 1:
            phi, _nx, _ny, _nz = sdf_box(s.env_box[i], x, y, z)
            if phi < best:
                best, kind, rho, bi = phi, (3 if phi > 0.0 else 0), phi, i
        ie += 1
    for i in range(s.env_capsule.shape[0]):
        if (mask[ie >> 6] >> (ie & 63)) & 1:
            r = s.env_capsule[i]
            ux, uy, uz = r[3] - r[0], r[4] - r[1], r[5] - r[2]
            uu = ux * ux + uy * uy + uz * uz
            t = 0.0
            if uu > 0.0:
                t = min(max(((x - r[0]) * ux + (y - r[1]) * uy + (z - r[2]) * uz) / uu, 0.0), 1.0)
            dx, dy, dz = x - r[0] - t * ux, y - r[1] - t * uy, z - r[2] - t * uz
            rr = math.sqrt(dx * dx + dy * dy + dz * dz)
            phi = rr - r[6]
            if phi < best:
                best, rho = phi, rr
                if 0.0 < t < 1.0:
                    kind = 2
                    sq = math.sqrt(uu)
                    ex, ey, ez = ux / sq, uy / sq, uz / sq
                else:
                    kind = 1
        ie += 1
    phi_all, nx, ny, nz = env_sdf(s, x, y, z, mask)  # every shape: a heightfield or the grid may win
    if phi_all < best:
        return  # heightfield / mesh terrain: frozen normal
    if kind == 0 or not (rho > 0.0):
        return
    if kind == 3:  # outside a box: n = R (s o)/|o| in its frame, dn/dl = (I - n n^T) diag(o > 0) / |o|
        e = s.env_box[bi]
        dx, dy, dz = x - e[9], y - e[10], z - e[11]
        lx = e[0] * dx + e[3] * dy + e[6] * dz
        ly = e[1] * dx + e[4] * dy + e[7] * dz
        lz = e[2] * dx + e[5] * dy + e[8] * dz
        o0 = max(abs(lx) - e[12], 0.0)
        o1 = max(abs(ly) - e[13], 0.0)
        o2 = max(abs(lz) - e[14], 0.0)
        s0 = 1.0 if lx >= 0.0 else -1.0
        s1 = 1.0 if ly >= 0.0 else -1.0
        s2 = 1.0 if lz >= 0.0 else -1.0
        n0, n1, n2 = s0 * o0 / rho, s1 * o1 / rho, s2 * o2 / rho
        for r in range(3):
            for c in range(3):
                acc = 0.0
                for i in range(3):
                    ni = n0 if i == 0 else (n1 if i == 1 else n2)
                    oi = o0 if i == 0 else (o1 if i == 1 else o2)
                    if oi <= 0.0:
                        continue
                    for j in range(3):
                        nj = n0 if j == 0 else (n1 if j == 1 else n2)
                        loc = ((1.0 if i == j else 0.0) - ni * nj) / rho  # column i of diag(active) only
                        acc += e[3 * r + j] * loc * e[3 * c + i]
                out[r, c] = acc
        return
    for r in range(3):
        nr = nx if r == 0 else (ny if r == 1 else nz)
        er = ex if r == 0 else (ey if r == 1 else ez)
        for c in range(3):
            nc = nx if c == 0 else (ny if c == 1 else nz)
            ec = ex if c == 0 else (ey if c == 1 else ez)
            pr = (1.0 if r == c else 0.0) - nr * nc
            if kind == 2:  # (I - n n^T)(I - e e^T): e along the axis, n _|_ e
                pr -= er * ec
            out[r, c] = pr / rho


@kernel
def nmdp_point(s, F, k, zeta, mu, nvert, cand, kp, R, p, V, D, T1, T2, Dn):
    """Contact point ``kp`` on its body at world pose ``(R, p)``: its vertices ``V`` (nvert, 3)
    and their derivatives ``D`` (nvert, 3, 3), ``D[i] = dv^i/dx`` (module docstring; zero for a
    point outside the candidate set, ``cand`` False).  ``T1, T2, Dn``: (3, 3) scratch.  Returns
    ``(x, y, z, sd, nx, ny, nz, capacity)`` (the detection's world point, signed depth and normal)."""
    x, y, z, sd, nx, ny, nz = contact_detect(s, kp, R, p)
    cap = nmdp_capacity(k, zeta, sd, cand)
    d = sd if sd > 0.0 else 0.0
    dcap = 3.0 * k * d * d if cand else 0.0  # d(capacity)/dd
    t1x, t1y, t1z, t2x, t2y, t2z = nmdp_basis(F, nx, ny, nz)
    env_normal_jacobian(s, x, y, z, s.pt_envmask[kp], Dn)
    flat = True  # dn/dx = 0 (a plane, frozen terrain): the basis' Jacobian is multiplied by zero
    for r in range(3):
        for c in range(3):
            if Dn[r, c] != 0.0:
                flat = False
    if not flat:
        nmdp_basis_jacobian(F, nx, ny, nz, T1, T2)
    for i in range(nvert):
        ca, sa = vertex_angle(i, nvert)
        u0 = nx + mu * (ca * t1x + sa * t2x)
        u1 = ny + mu * (ca * t1y + sa * t2y)
        u2 = nz + mu * (ca * t1z + sa * t2z)
        V[i, 0], V[i, 1], V[i, 2] = cap * u0, cap * u1, cap * u2
        if flat:
            for r in range(3):
                ur = u0 if r == 0 else (u1 if r == 1 else u2)
                D[i, r, 0] = -dcap * ur * nx
                D[i, r, 1] = -dcap * ur * ny
                D[i, r, 2] = -dcap * ur * nz
            continue
        for r in range(3):
            ur = u0 if r == 0 else (u1 if r == 1 else u2)
            for c in range(3):
                nc = nx if c == 0 else (ny if c == 1 else nz)
                acc = 0.0  # ((I + mu dt^i/dn) dn/dx)[r, c]
                for j in range(3):
                    g = (1.0 if r == j else 0.0) + mu * (ca * T1[r, j] + sa * T2[r, j])
                    acc += g * Dn[j, c]
                D[i, r, c] = -dcap * ur * nc + cap * acc
    return x, y, z, sd, nx, ny, nz, cap


@kernel
def pair_basis(F, sg, nx, ny, nz):
    """The tangent basis of a body-body point: :func:`nmdp_basis` of ``sg n`` (``sg = +-1``, the sign
    of ``n . up`` when the step's contact set was chosen), which spans the same tangent plane.  A
    point of a lower body pressed against an upper body's underside has ``n = -up``, the smooth
    basis' singular point; with ``sg = -1`` it is built from ``-n ~ up``, where it is smooth, so the
    vertices stay smooth over the step (notes/body_contact.md Sec. 3.4)."""
    return nmdp_basis(F, sg * nx, sg * ny, sg * nz)


@kernel
def pair_direction(F, mu, sg, nx, ny, nz, i, nvert):
    """``n + mu t^i`` of a body-body point (unscaled vertex ``i`` of ``nvert``; basis :func:`pair_basis`)."""
    t1x, t1y, t1z, t2x, t2y, t2z = pair_basis(F, sg, nx, ny, nz)
    ca, sa = vertex_angle(i, nvert)
    return (nx + mu * (ca * t1x + sa * t2x), ny + mu * (ca * t1y + sa * t2y), nz + mu * (ca * t1z + sa * t2z))


@kernel
def _rotate_jacobian(e, L, out):
    """``out = R L R^T`` with ``R`` the row-major rotation ``e[0:9]`` (a box's or cylinder's row)."""
    for r in range(3):
        for c in range(3):
            acc = 0.0
            for i in range(3):
                for j in range(3):
                    acc += e[3 * r + j] * L[j, i] * e[3 * c + i]
            out[r, c] = acc


@kernel
def shape_normal_jacobian(s, j, face, x, y, z, L, out):
    """``out`` (3, 3) = ``d nB / d y`` of body shape ``j``'s normal at ``y = (x, y, z)`` in its body's
    frame, with the item's face choice ``face`` (:func:`pbsim.contact.query.face_sdf`: a point inside
    a box pushed out through that face has its flat normal): zero on box faces (inside a box), cylinder
    caps and convex hulls (flat faces); ``(I - n n^T) / rho`` on spheres and capsule caps,
    ``(I - n n^T - e e^T) / rho`` on a capsule's side (``e`` its axis) and a cylinder's side; outside a
    box's edges and corners ``(I - n n^T) P / rho`` (``P`` the directions that move the nearest point
    of the box's core), and around a cylinder's rims likewise (:func:`env_normal_jacobian`, in the
    body's frame).  ``L``: (3, 3) scratch."""
    for r in range(3):
        for c in range(3):
            out[r, c] = 0.0
            L[r, c] = 0.0
    kind = s.shp_kind[j]
    e = s.shp_row[j]
    if kind == 0:  # sphere
        dx, dy, dz = x - e[0], y - e[1], z - e[2]
        rho = math.sqrt(dx * dx + dy * dy + dz * dz)
        if not (rho > 0.0):
            return
        n0, n1, n2 = dx / rho, dy / rho, dz / rho
        for r in range(3):
            nr = n0 if r == 0 else (n1 if r == 1 else n2)
            for c in range(3):
                nc = n0 if c == 0 else (n1 if c == 1 else n2)
                out[r, c] = ((1.0 if r == c else 0.0) - nr * nc) / rho
        return
    if kind == 1:  # capsule
        ux, uy, uz = e[3] - e[0], e[4] - e[1], e[5] - e[2]
        uu = ux * ux + uy * uy + uz * uz
        t = 0.0
        if uu > 0.0:
            t = min(max(((x - e[0]) * ux + (y - e[1]) * uy + (z - e[2]) * uz) / uu, 0.0), 1.0)
        dx, dy, dz = x - e[0] - t * ux, y - e[1] - t * uy, z - e[2] - t * uz
        rho = math.sqrt(dx * dx + dy * dy + dz * dz)
        if not (rho > 0.0):
            return
        n0, n1, n2 = dx / rho, dy / rho, dz / rho
        side = 0.0 < t < 1.0
        sq = math.sqrt(uu) if uu > 0.0 else 1.0
        e0, e1, e2 = ux / sq, uy / sq, uz / sq
        for r in range(3):
            nr = n0 if r == 0 else (n1 if r == 1 else n2)
            er = e0 if r == 0 else (e1 if r == 1 else e2)
            for c in range(3):
                nc = n0 if c == 0 else (n1 if c == 1 else n2)
                ec = e0 if c == 0 else (e1 if c == 1 else e2)
                pr = (1.0 if r == c else 0.0) - nr * nc
                if side:
                    pr -= er * ec
                out[r, c] = pr / rho
        return
    if kind == 2 or kind == 3:  # box / cylinder: in the shape's own frame, then rotated
        dx, dy, dz = x - e[9], y - e[10], z - e[11]
        lx = e[0] * dx + e[3] * dy + e[6] * dz
        ly = e[1] * dx + e[4] * dy + e[7] * dz
        lz = e[2] * dx + e[5] * dy + e[8] * dz
        if kind == 2:
            if face >= 0 and abs(lx) < e[12] and abs(ly) < e[13] and abs(lz) < e[14]:
                return  # pushed out through the item's face: flat
            o0 = max(abs(lx) - e[12], 0.0)
            o1 = max(abs(ly) - e[13], 0.0)
            o2 = max(abs(lz) - e[14], 0.0)
            rho = math.sqrt(o0 * o0 + o1 * o1 + o2 * o2)
            if not (rho > 0.0):
                return  # inside: the nearest face, flat
            n0 = (1.0 if lx >= 0.0 else -1.0) * o0 / rho
            n1 = (1.0 if ly >= 0.0 else -1.0) * o1 / rho
            n2 = (1.0 if lz >= 0.0 else -1.0) * o2 / rho
            for i in range(3):
                oi = o0 if i == 0 else (o1 if i == 1 else o2)
                if oi <= 0.0:
                    continue
                ni = n0 if i == 0 else (n1 if i == 1 else n2)
                for jj in range(3):
                    nj = n0 if jj == 0 else (n1 if jj == 1 else n2)
                    L[jj, i] = ((1.0 if i == jj else 0.0) - ni * nj) / rho
        else:
            rr = math.sqrt(lx * lx + ly * ly)
            if not (rr > 0.0):
                return
            u0, u1 = lx / rr, ly / rr
            qr = rr - e[12]
            qz = abs(lz) - e[13]
            if qr > 0.0 and qz > 0.0:  # around a rim: n = (l - c) / |l - c|, c = (r u, +-h)
                sz = 1.0 if lz >= 0.0 else -1.0
                ph = math.sqrt(qr * qr + qz * qz)
                n0, n1, n2 = u0 * qr / ph, u1 * qr / ph, sz * qz / ph
                for r in range(3):
                    nr = n0 if r == 0 else (n1 if r == 1 else n2)
                    for c in range(3):
                        acc = 0.0
                        for i in range(3):
                            ni = n0 if i == 0 else (n1 if i == 1 else n2)
                            pin = (1.0 if r == i else 0.0) - nr * ni
                            # (I - r P / rr)[i, c], P = I_xy - u u^T
                            pc = 0.0
                            if i < 2 and c < 2:
                                ui = u0 if i == 0 else u1
                                uc = u0 if c == 0 else u1
                                pc = (1.0 if i == c else 0.0) - ui * uc
                            acc += pin * ((1.0 if i == c else 0.0) - e[12] * pc / rr)
                        L[r, c] = acc / ph
            elif qr > 0.0 or (qz <= 0.0 and qr >= qz):  # the side (outside, or inside nearest to it)
                for r in range(2):
                    ur = u0 if r == 0 else u1
                    for c in range(2):
                        uc = u0 if c == 0 else u1
                        L[r, c] = ((1.0 if r == c else 0.0) - ur * uc) / rr
            else:
                return  # a cap: flat
        _rotate_jacobian(e, L, out)
        return
    # a convex hull: flat faces


@kernel
def pair_frozen(s, kp):
    """Whether body-body point ``kp`` meets its shape through a contact plane frozen for the step
    (:func:`pair_plane`): every shape but spheres and capsules, whose distance is smooth."""
    return s.shp_kind[s.it_shape[s.pp_item[kp]]] >= 2


@kernel
def pair_plane(s, kp, face, RA, pA, RB, pB, pl):
    """The contact plane of body-body point ``kp`` for a step, at the poses of its bodies at the
    step's start, in the frame of the shape's body B: ``pl = [y_k (3), nB_k (3), phi_k]``, the point
    ``y_k``, the shape's normal and distance there (:func:`pbsim.contact.query.face_sdf` with the
    item's ``face``)."""
    _x, _y, _z, y0, y1, y2 = pair_local(s, kp, RA, pA, RB, pB)
    phi, m0, m1, m2 = face_sdf(s, s.it_shape[s.pp_item[kp]], face, y0, y1, y2)
    pl[0], pl[1], pl[2] = y0, y1, y2
    pl[3], pl[4], pl[5] = m0, m1, m2
    pl[6] = phi


@kernel
def nmdp_pair_point(s, F, k, zeta, nvert, kp, face, sg, pl, RA, pA, RB, pB, V, D, T1, T2, Dn):
    """Body-body point ``kp`` (:mod:`pbsim.contact.pairs`; its item's shape on body B, queried in
    B's frame with the item's ``face``) at the world poses of its bodies: its vertices ``V`` (nvert,
    3) ``= (k d^3 + zeta)(n + mu t^i)`` (``mu`` the point's own, the basis :func:`pair_basis` with
    ``sg``), ``D[i] = dv^i/dn`` at a fixed depth ``= (k d^3 + zeta)(I + mu sg T^i)`` (``T^i`` the
    basis' Jacobian at ``sg n``), and ``Dn`` = ``R_B (d nB / d y) R_B^T`` (the shape's curvature,
    world coordinates: :func:`shape_normal_jacobian`).  ``T1, T2``: (3, 3) scratch.  Returns ``(x,
    y, z, sd, nx, ny, nz, capacity, d capacity / d sd)``: the detection's world point, signed depth and
    normal (out of B).

    Against a box, cylinder or hull (:func:`pair_frozen`) the point meets the contact plane ``pl``
    of the step's start, fixed in B's frame (:func:`pair_plane`): ``sd = r - phi_k - nB_k . (y -
    y_k)``, ``n = R_B nB_k``, ``Dn = 0``.  Why: the box distance with the item's face choice
    (:func:`pbsim.contact.query.face_sdf`) jumps where a point deep along the face leaves the box
    through a side plane (from the face's depth to the distance outside, 2.5 cm measured with a
    gripper's finger pad inside a box at an iterate), and the projection's Newton steps failed on
    that jump (16 sub-steps a step); the plane is the exact distance over a face and a
    supporting plane elsewhere.  Spheres and capsules keep their exact distance and curvature."""
    if pair_frozen(s, kp):
        x, y, z, y0, y1, y2 = pair_local(s, kp, RA, pA, RB, pB)
        sd = s.pp_radius[kp] - pl[6] - (pl[3] * (y0 - pl[0]) + pl[4] * (y1 - pl[1]) + pl[5] * (y2 - pl[2]))
        m0, m1, m2 = pl[3], pl[4], pl[5]
        nx = RB[0, 0] * m0 + RB[0, 1] * m1 + RB[0, 2] * m2
        ny = RB[1, 0] * m0 + RB[1, 1] * m1 + RB[1, 2] * m2
        nz = RB[2, 0] * m0 + RB[2, 1] * m1 + RB[2, 2] * m2
    else:
        x, y, z, sd, nx, ny, nz = pair_detect(s, kp, RA, pA, RB, pB, face)
    cap = nmdp_capacity(k, zeta, sd, True)
    d = sd if sd > 0.0 else 0.0
    dcap = 3.0 * k * d * d
    mu = s.pp_mu[kp]
    mx, my, mz = sg * nx, sg * ny, sg * nz
    t1x, t1y, t1z, t2x, t2y, t2z = nmdp_basis(F, mx, my, mz)
    nmdp_basis_jacobian(F, mx, my, mz, T1, T2)
    for i in range(nvert):
        ca, sa = vertex_angle(i, nvert)
        V[i, 0] = cap * (nx + mu * (ca * t1x + sa * t2x))
        V[i, 1] = cap * (ny + mu * (ca * t1y + sa * t2y))
        V[i, 2] = cap * (nz + mu * (ca * t1z + sa * t2z))
        for r in range(3):
            for c in range(3):
                D[i, r, c] = cap * ((1.0 if r == c else 0.0) + mu * sg * (ca * T1[r, c] + sa * T2[r, c]))
    if pair_frozen(s, kp):
        for r in range(3):
            for c in range(3):
                Dn[r, c] = 0.0
        return x, y, z, sd, nx, ny, nz, cap, dcap
    # the curvature of B's shape at y = R_B^T (x - p_B), rotated to the world
    dx, dy, dz = x - pB[0], y - pB[1], z - pB[2]
    y0 = RB[0, 0] * dx + RB[1, 0] * dy + RB[2, 0] * dz
    y1 = RB[0, 1] * dx + RB[1, 1] * dy + RB[2, 1] * dz
    y2 = RB[0, 2] * dx + RB[1, 2] * dy + RB[2, 2] * dz
    shape_normal_jacobian(s, s.it_shape[s.pp_item[kp]], face, y0, y1, y2, T2, T1)
    for r in range(3):
        for c in range(3):
            acc = 0.0
            for i in range(3):
                for j in range(3):
                    acc += RB[r, i] * T1[i, j] * RB[c, j]
            Dn[r, c] = acc
    return x, y, z, sd, nx, ny, nz, cap, dcap


def nmdp_vertices(model, scene, q, k=None, zeta=None, vx: int = 4, cand=None) -> dict:
    """The wrench model at one configuration ``q`` (a tool and test helper, Python loops):
    ``V`` (npts, vx, 3) vertices, ``dV`` (npts, vx, 3, nv) = ``dv^i/dtheta`` in pbsim's tangent
    coordinates, ``x`` (npts, 3) points, ``sd`` (npts,) signed depths, ``n`` (npts, 3) normals,
    ``cap`` (npts,) capacities.  ``k`` None: :func:`default_k`; ``zeta`` None: ``1e-3 k
    delta_ref^3``; ``cand`` (npts,) bools, None: every point is a candidate; mu: the scene's."""
    from pbsim.dynamics.api import as_batch, point_jacobian
    from pbsim.dynamics.kinematics import fk_state
    from pbsim.dynamics.workspace import work_for

    k = default_k(model, scene.delta_ref) if k is None else float(k)
    zeta = 1e-3 * k * scene.delta_ref**3 if zeta is None else float(zeta)
    check_wrench_parameters("nmdp_vertices", scene.mu, k, zeta, vx)
    Q, _ = as_batch(q, model.nq, "q")
    ks = scene.kernel_arrays(model)
    n = ks.npts
    cand = np.ones(n, bool) if cand is None else np.asarray(cand, bool)
    w = work_for(model, 1)
    fk_state(model.k, w, 0, np.ascontiguousarray(Q[0]))
    F = tangent_frame(model)
    V, D = np.zeros((n, vx, 3)), np.zeros((n, vx, 3, 3))
    X, SD, N, C = np.zeros((n, 3)), np.zeros(n), np.zeros((n, 3)), np.zeros(n)
    dV = np.zeros((n, vx, 3, model.nv))
    T1, T2, Dn = np.zeros((3, 3)), np.zeros((3, 3)), np.zeros((3, 3))
    for kp in range(n):
        body = int(ks.pt_body[kp])
        R = np.ascontiguousarray(w.Rw[0, body])
        p = np.ascontiguousarray(w.pw[0, body])
        x, y, z, sd, nx, ny, nz, cap = nmdp_point(
            ks, F, k, zeta, float(scene.mu), int(vx), bool(cand[kp]), kp, R, p, V[kp], D[kp], T1, T2, Dn
        )
        X[kp], SD[kp], N[kp], C[kp] = (x, y, z), sd, (nx, ny, nz), cap
        J = point_jacobian(model, Q[0], body, ks.pt_local[kp])[3:]  # (3, nv) linear rows at x
        dV[kp] = D[kp] @ J
    return dict(V=V, dV=dV, x=X, sd=SD, n=N, cap=C, k=k, zeta=zeta)
