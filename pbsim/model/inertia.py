"""Rigid-body inertia helpers used at load time (numpy, not kernels)."""
from __future__ import annotations

import numpy as np

from pbsim.errors import InertiaError


def skew(v):
    return np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])


def spatial_inertia(mass, com, inertia_com):
    """6x6 spatial inertia at the body origin, ``[angular; linear]`` order (Featherstone Eq. 2.63)."""
    c = skew(com)
    I = np.zeros((6, 6))
    I[0:3, 0:3] = inertia_com + mass * c @ c.T
    I[0:3, 3:6] = mass * c
    I[3:6, 0:3] = mass * c.T
    I[3:6, 3:6] = mass * np.eye(3)
    return I


def split_spatial_inertia(I6):
    """Inverse of :func:`spatial_inertia`: (mass, com, inertia about com)."""
    m = I6[3, 3]
    if m <= 0:
        return 0.0, np.zeros(3), np.zeros((3, 3))
    mc = I6[0:3, 3:6]
    com = np.array([mc[2, 1], mc[0, 2], mc[1, 0]]) / m
    c = skew(com)
    Ic = I6[0:3, 0:3] - m * c @ c.T
    return m, com, 0.5 * (Ic + Ic.T)


def transform_to_parent(R, p, I6):
    """``X^T I X`` for the pose (R, p) of a child frame in its parent (numpy reference)."""
    X = np.zeros((6, 6))
    X[0:3, 0:3] = R.T
    X[3:6, 3:6] = R.T
    X[3:6, 0:3] = -R.T @ skew(p)
    return X.T @ I6 @ X


def check_inertia(mass, inertia_com, where: str, fix: bool = False, rtol: float = 1e-9):
    """Validate a link's (mass, rotational inertia about com).

    Raises :class:`InertiaError` naming ``where`` when the mass is negative or not finite,
    the inertia is not symmetric positive (semi-)definite, or its principal moments violate the
    triangle inequality ``I1 + I2 >= I3``.  With ``fix=True`` the inertia is instead projected
    to the nearest valid one (eigenvalues clipped, smallest moments raised) and returned.
    """
    I = np.asarray(inertia_com, dtype=float)
    if not np.isfinite(mass) or not np.all(np.isfinite(I)):
        raise InertiaError(f"{where}: mass {mass!r} or inertia {I.tolist()} is not finite")
    if mass < 0:
        raise InertiaError(f"{where}: negative mass {mass}")
    if mass == 0:
        return I * 0.0
    if not np.allclose(I, I.T, atol=1e-12 * max(1.0, np.abs(I).max())):
        if not fix:
            raise InertiaError(f"{where}: inertia matrix is not symmetric: {I.tolist()}")
    I = 0.5 * (I + I.T)
    w, V = np.linalg.eigh(I)
    scale = max(abs(w).max(), 1e-300)
    bad_pd = w[0] <= -rtol * scale or (w[0] <= 0 and mass > 0 and w[-1] == 0)
    ws = np.sort(w)
    bad_tri = ws[0] + ws[1] < ws[2] * (1 - 1e-6) - rtol * scale
    if not (bad_pd or bad_tri):
        return I
    if not fix:
        what = "not positive definite" if bad_pd else "violates the triangle inequality I1 + I2 >= I3"
        raise InertiaError(f"{where}: inertia with principal moments {np.round(w, 12).tolist()} is {what} "
                           f"(pass fix_inertia=True / --fix-inertia to project it to the nearest valid inertia)")
    floor = max(1e-9 * scale, 1e-12)
    w = np.maximum(w, floor)
    order = np.argsort(w)
    a, b, c = w[order]
    if a + b < c:
        deficit = c - (a + b)
        a += deficit / 2
        b += deficit / 2
    w2 = np.empty(3)
    w2[order] = (a, b, c)
    return (V * w2) @ V.T
