"""Signed-distance grid of a triangle mesh (built once at load time) and its trilinear sampler.

Convention everywhere in ``pbsim.contact``: ``phi > 0`` outside (free space), ``phi < 0`` inside
the environment; the normal is ``grad phi`` (points out of the environment).

Build (after Bridson's ``makelevelset3``, without its sweeping):
1. exact point-triangle distances for every node within ``band`` of each triangle's box, and
   ``min(distance, band)`` stored (so the stored unsigned field is exactly ``min(dist, band)``,
   still 1-Lipschitz; deeper/farther than ``band`` reads as ``band``);
2. sign from vertical columns: a closed (watertight) mesh uses ray parity along +z; an **open**
   mesh is treated as a height surface: a node is inside iff it lies below the highest point
   where the mesh crosses its vertical column; columns that miss the mesh are outside.

Interpolation error bound (stated and tested): the SDF is 1-Lipschitz, and trilinear weights
are a convex combination, so with exact node values
``|phi_grid(x) - phi(x)| <= sum_i w_i |x_i - x| <= (sqrt(3)/2) h`` wherever
``|phi(x)| <= band - sqrt(3) h`` (h = spacing) provided the sign of every corner is right;
where all 8 corners of x's cell have their closest point on the interior of one planar face,
phi is affine there and the interpolant is exact (float32 storage: ~1e-7 |phi|).
"""
from __future__ import annotations

import math

import numpy as np

import numba
from numba import prange

from pbsim.jit import kernel


@kernel
def point_triangle_dist2(px, py, pz, ax, ay, az, bx, by, bz, cx, cy, cz):
    """Squared distance from P to triangle ABC (Ericson, Real-Time Collision Detection 5.1.5)."""
    abx, aby, abz = bx - ax, by - ay, bz - az
    acx, acy, acz = cx - ax, cy - ay, cz - az
    apx, apy, apz = px - ax, py - ay, pz - az
    d1 = abx * apx + aby * apy + abz * apz
    d2 = acx * apx + acy * apy + acz * apz
    if d1 <= 0.0 and d2 <= 0.0:
        return apx * apx + apy * apy + apz * apz
    bpx, bpy, bpz = px - bx, py - by, pz - bz
    d3 = abx * bpx + aby * bpy + abz * bpz
    d4 = acx * bpx + acy * bpy + acz * bpz
    if d3 >= 0.0 and d4 <= d3:
        return bpx * bpx + bpy * bpy + bpz * bpz
    vc = d1 * d4 - d3 * d2
    if vc <= 0.0 and d1 >= 0.0 and d3 <= 0.0:
        t = d1 / (d1 - d3)
        qx, qy, qz = apx - t * abx, apy - t * aby, apz - t * abz
        return qx * qx + qy * qy + qz * qz
    cpx, cpy, cpz = px - cx, py - cy, pz - cz
    d5 = abx * cpx + aby * cpy + abz * cpz
    d6 = acx * cpx + acy * cpy + acz * cpz
    if d6 >= 0.0 and d5 <= d6:
        return cpx * cpx + cpy * cpy + cpz * cpz
    vb = d5 * d2 - d1 * d6
    if vb <= 0.0 and d2 >= 0.0 and d6 <= 0.0:
        t = d2 / (d2 - d6)
        qx, qy, qz = apx - t * acx, apy - t * acy, apz - t * acz
        return qx * qx + qy * qy + qz * qz
    va = d3 * d6 - d5 * d4
    if va <= 0.0 and (d4 - d3) >= 0.0 and (d5 - d6) >= 0.0:
        t = (d4 - d3) / ((d4 - d3) + (d5 - d6))
        qx = bpx - t * (cx - bx)
        qy = bpy - t * (cy - by)
        qz = bpz - t * (cz - bz)
        return qx * qx + qy * qy + qz * qz
    den = 1.0 / (va + vb + vc)
    v = vb * den
    w = vc * den
    qx = apx - abx * v - acx * w
    qy = apy - aby * v - acy * w
    qz = apz - abz * v - acz * w
    return qx * qx + qy * qy + qz * qz


@numba.njit(cache=True, parallel=True, error_model="numpy")  # a one-off setup loop, not a batch driver
def grid_exact_band(V, F, org, h, band, phi):
    """Exact unsigned distance at the nodes within ``band`` cells of each triangle's box (min over
    triangles).  Parallel over blocks of x-slabs, so no two threads write the same node."""
    nx, ny, nz = phi.shape
    blk = 4
    nblk = (nx + blk - 1) // blk
    for ib in prange(nblk):
        ia = ib * blk
        ie = min(nx - 1, ia + blk - 1)
        for t in range(F.shape[0]):
            a, b, c = F[t, 0], F[t, 1], F[t, 2]
            lo0 = min(V[a, 0], V[b, 0], V[c, 0])
            hi0 = max(V[a, 0], V[b, 0], V[c, 0])
            i0 = max(ia, int(math.floor((lo0 - org[0]) / h)) - band)
            i1 = min(ie, int(math.ceil((hi0 - org[0]) / h)) + band)
            if i0 > i1:
                continue
            lo1 = min(V[a, 1], V[b, 1], V[c, 1])
            hi1 = max(V[a, 1], V[b, 1], V[c, 1])
            lo2 = min(V[a, 2], V[b, 2], V[c, 2])
            hi2 = max(V[a, 2], V[b, 2], V[c, 2])
            j0 = max(0, int(math.floor((lo1 - org[1]) / h)) - band)
            j1 = min(ny - 1, int(math.ceil((hi1 - org[1]) / h)) + band)
            k0 = max(0, int(math.floor((lo2 - org[2]) / h)) - band)
            k1 = min(nz - 1, int(math.ceil((hi2 - org[2]) / h)) + band)
            for i in range(i0, i1 + 1):
                x = org[0] + i * h
                for j in range(j0, j1 + 1):
                    y = org[1] + j * h
                    for k in range(k0, k1 + 1):
                        d = math.sqrt(point_triangle_dist2(x, y, org[2] + k * h, V[a, 0], V[a, 1], V[a, 2],
                                                           V[b, 0], V[b, 1], V[b, 2], V[c, 0], V[c, 1], V[c, 2]))
                        if d < phi[i, j, k]:
                            phi[i, j, k] = d


@kernel
def _edge(px, py, qx, qy, x, y):
    """Edge function of directed edge P->Q at (x, y), exactly antisymmetric in (P, Q)."""
    if px > qx or (px == qx and py > qy):
        return -((px - qx) * (y - qy) - (py - qy) * (x - qx))
    return (qx - px) * (y - py) - (qy - py) * (x - px)


@kernel
def _inside_edge(px, py, qx, qy, x, y):
    e = _edge(px, py, qx, qy, x, y)
    if e > 0.0:
        return True
    if e < 0.0:
        return False
    dx = qx - px
    dy = qy - py
    return dy < 0.0 or (dy == 0.0 and dx > 0.0)  # tie rule: a shared edge belongs to one side


@kernel
def column_hits(V, F, org, h, nx, ny, nz, zmax, count):
    """Vertical-ray crossings: ``zmax[i, j]`` highest crossing of column (i, j) (-inf if none);
    ``count[i, j, k]`` += 1 for each crossing between node k-1 and k (for parity).  Rays through
    shared edges/vertices count once (exactly antisymmetric edge functions + a tie rule)."""
    for t in range(F.shape[0]):
        a, b, c = F[t, 0], F[t, 1], F[t, 2]
        ax, ay, az = V[a, 0], V[a, 1], V[a, 2]
        bx, by, bz = V[b, 0], V[b, 1], V[b, 2]
        cx, cy, cz = V[c, 0], V[c, 1], V[c, 2]
        den = (ax - cx) * (by - cy) - (ay - cy) * (bx - cx)
        if den == 0.0:
            continue  # vertical triangle: no vertical ray crosses its interior
        if den < 0.0:  # orient counter-clockwise in xy
            bx, by, bz, cx, cy, cz = cx, cy, cz, bx, by, bz
            den = -den
        i0 = max(0, int(math.ceil((min(ax, bx, cx) - org[0]) / h)))
        i1 = min(nx - 1, int(math.floor((max(ax, bx, cx) - org[0]) / h)))
        j0 = max(0, int(math.ceil((min(ay, by, cy) - org[1]) / h)))
        j1 = min(ny - 1, int(math.floor((max(ay, by, cy) - org[1]) / h)))
        for i in range(i0, i1 + 1):
            x = org[0] + i * h
            for j in range(j0, j1 + 1):
                y = org[1] + j * h
                if not (_inside_edge(ax, ay, bx, by, x, y) and _inside_edge(bx, by, cx, cy, x, y)
                        and _inside_edge(cx, cy, ax, ay, x, y)):
                    continue
                l1 = _edge(bx, by, cx, cy, x, y) / den
                l2 = _edge(cx, cy, ax, ay, x, y) / den
                zh = l1 * az + l2 * bz + (1.0 - l1 - l2) * cz
                if zh > zmax[i, j]:
                    zmax[i, j] = zh
                kk = int(math.ceil((zh - org[2]) / h))
                if kk < 0:
                    kk = 0
                if kk < nz:
                    count[i, j, kk] += 1


@kernel
def apply_sign(org, h, phi, zmax, count, parity):
    nx, ny, nz = phi.shape
    for i in range(nx):
        for j in range(ny):
            acc = 0
            for k in range(nz):
                acc += count[i, j, k]
                if parity:
                    inside = acc % 2 == 1 and zmax[i, j] > org[2] + k * h  # odd crossings below
                else:
                    inside = org[2] + k * h < zmax[i, j]
                if inside:
                    phi[i, j, k] = -phi[i, j, k]


@kernel
def grid_sample(g, off, nx, ny, nz, ox, oy, oz, h, x, y, z):
    """Trilinear value and gradient of the grid stored flat in ``g[off:]`` (index (i*ny+j)*nz+k).

    Outside the grid box the value is extended as ``phi(c) + sign(phi(c)) |x - c|`` with ``c`` the
    point clamped into the box (continuous, 1-Lipschitz); the gradient is that of the clamped
    sample plus the unit direction ``(x - c)/|x - c|`` outside.  Returns (phi, gx, gy, gz)."""
    hx = (nx - 1) * h
    hy = (ny - 1) * h
    hz = (nz - 1) * h
    cx = min(max(x - ox, 0.0), hx)
    cy = min(max(y - oy, 0.0), hy)
    cz = min(max(z - oz, 0.0), hz)
    ex = x - ox - cx
    ey = y - oy - cy
    ez = z - oz - cz
    fx = cx / h
    fy = cy / h
    fz = cz / h
    i = min(int(fx), nx - 2)
    j = min(int(fy), ny - 2)
    k = min(int(fz), nz - 2)
    tx = fx - i
    ty = fy - j
    tz = fz - k
    base = off + (i * ny + j) * nz + k
    c000 = float(g[base])
    c001 = float(g[base + 1])
    c010 = float(g[base + nz])
    c011 = float(g[base + nz + 1])
    c100 = float(g[base + ny * nz])
    c101 = float(g[base + ny * nz + 1])
    c110 = float(g[base + ny * nz + nz])
    c111 = float(g[base + ny * nz + nz + 1])
    c00 = c000 + (c001 - c000) * tz  # interpolate along z
    c01 = c010 + (c011 - c010) * tz
    c10 = c100 + (c101 - c100) * tz
    c11 = c110 + (c111 - c110) * tz
    c0 = c00 + (c01 - c00) * ty
    c1 = c10 + (c11 - c10) * ty
    val = c0 + (c1 - c0) * tx
    gx = (c1 - c0) / h
    gy = ((c01 - c00) * (1.0 - tx) + (c11 - c10) * tx) / h
    dz0 = (c001 - c000) * (1.0 - ty) + (c011 - c010) * ty
    dz1 = (c101 - c100) * (1.0 - ty) + (c111 - c110) * ty
    gz = (dz0 * (1.0 - tx) + dz1 * tx) / h
    e = math.sqrt(ex * ex + ey * ey + ez * ez)
    if e > 0.0:
        sg = 1.0 if val >= 0.0 else -1.0
        val += sg * e
        gx += sg * ex / e
        gy += sg * ey / e
        gz += sg * ez / e
    return val, gx, gy, gz


def build_sdf_grid(V, F, lo, spacing, shape, closed: bool, band_cells: int):
    """Signed distances (float32, shape ``shape``) at nodes ``lo + spacing * (i, j, k)``, exact
    where ``|phi| <= band_cells * spacing`` and clamped to that value beyond."""
    V = np.ascontiguousarray(V, np.float64)
    F = np.ascontiguousarray(F, np.int64)
    org = np.asarray(lo, np.float64)
    h = float(spacing)
    band = float(band_cells) * h
    phi = np.full(shape, np.float32(band), np.float32)
    grid_exact_band(V, F, org, h, int(band_cells), phi)
    np.minimum(phi, np.float32(band), out=phi)
    zmax = np.full(shape[:2], -np.inf)
    count = np.zeros(shape, np.int32)
    column_hits(V, F, org, h, shape[0], shape[1], shape[2], zmax, count)
    apply_sign(org, h, phi, zmax, count, bool(closed))
    return phi
