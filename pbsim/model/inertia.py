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
    """Inverse of :func:`spatial_inertia`: (mass, com, inertia about com).

    A massless spatial inertia keeps its rotational part (a ``mass="0"`` link with an inertia
    tensor, as Pinocchio reads it): ``(0, 0, I6[:3, :3])``.
    """
    m = I6[3, 3]
    if m <= 0:
        Ir = I6[0:3, 0:3]
        return 0.0, np.zeros(3), 0.5 * (Ir + Ir.T)
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


# Documented scale bounds of what a robot file may hold (docs/reliability.md).  Beyond them the
# load-time linear algebra (eigenvalues, I + m c c^T, X^T I X) can overflow, and no robot is that
# large: a length (placement, centre of mass, shape size) of 1000 km, a mass of 10^12 kg, a
# moment of inertia of 10^18 kg m^2 (10^12 kg at 1000 m), gravity of 10^6 m/s^2; armature is an inertia.
MAX_LENGTH = 1e6
MAX_MASS = 1e12
MAX_INERTIA = 1e18
MAX_GRAVITY = 1e6  # m/s^2: 10^5 g

FIX_HINT = "pass fix_inertia=True / --fix-inertia to project it to the nearest valid inertia"
NOT_PD = "is not positive definite (a principal moment is negative)"
NOT_TRIANGLE = "violates the triangle inequality I1 + I2 >= I3"


def check_link_values(mass, inertia_com, where: str, fix: bool = False):
    """The checks that hold for every link, moving or static: a finite, non-negative mass and a
    finite, symmetric inertia.  Returns the (symmetrised) inertia; raises :class:`InertiaError`."""
    I = np.asarray(inertia_com, dtype=float)
    if not np.isfinite(mass) or not np.all(np.isfinite(I)):
        raise InertiaError(f"{where}: mass {mass!r} or inertia {I.tolist()} is not finite")
    if mass < 0:
        raise InertiaError(f"{where}: negative mass {mass}")
    if mass > MAX_MASS or np.abs(I).max() > MAX_INERTIA:  # before any eigenvalue: no overflow
        raise InertiaError(f"{where}: mass {mass!r} or inertia {I.tolist()} beyond the bounds "
                           f"{MAX_MASS:g} kg / {MAX_INERTIA:g} kg m^2 (docs/reliability.md)")
    if not np.allclose(I, I.T, atol=1e-12 * max(1.0, np.abs(I).max())) and not fix:
        raise InertiaError(f"{where}: inertia matrix is not symmetric: {I.tolist()}")
    return 0.5 * (I + I.T)


def inertia_problem(inertia_com, rtol: float = 1e-9) -> str | None:
    """What is wrong with a rotational inertia about the centre of mass, or None.

    :data:`NOT_PD` when a principal moment is negative (beyond ``rtol`` times the largest),
    :data:`NOT_TRIANGLE` when the moments violate ``I1 + I2 >= I3``.  A zero inertia (a point
    mass, or no inertia at all) and a thin rod (one zero moment) are physical limits: None.
    """
    I = np.asarray(inertia_com, dtype=float)
    if not np.any(I):
        return None
    w = np.linalg.eigvalsh(0.5 * (I + I.T))
    scale = max(abs(w).max(), 1e-300)
    if w[0] < -rtol * scale:
        return NOT_PD
    if w[0] + w[1] < w[2] * (1 - 1e-6) - rtol * scale:
        return NOT_TRIANGLE
    return None


def principal_moments(inertia_com) -> list:
    I = np.asarray(inertia_com, dtype=float)
    return np.round(np.linalg.eigvalsh(0.5 * (I + I.T)), 12).tolist()


def project_inertia(mass, inertia_com):
    """The nearest physical inertia: eigenvalues clipped (to a small positive floor when the link
    has mass, to 0 when it has none) and the two smallest raised until ``I1 + I2 >= I3``."""
    I = np.asarray(inertia_com, dtype=float)
    I = 0.5 * (I + I.T)
    w, V = np.linalg.eigh(I)
    scale = max(abs(w).max(), 1e-300)
    floor = max(1e-9 * scale, 1e-12) if mass > 0 else 0.0
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


def check_inertia(mass, inertia_com, where: str, fix: bool = False, rtol: float = 1e-9):
    """Validate one rigid body's (mass, rotational inertia about com) on its own.

    Raises :class:`InertiaError` naming ``where`` when the mass is negative or not finite, or the
    inertia is not symmetric, not positive (semi-)definite or violates the triangle inequality;
    with ``fix=True`` a non-physical inertia is projected (:func:`project_inertia`) and returned.
    (The loaders check merged bodies instead, see :mod:`pbsim.model.builder`.)
    """
    I = check_link_values(mass, inertia_com, where, fix)
    what = inertia_problem(I, rtol)
    if what is None:
        return I
    if not fix:
        raise InertiaError(f"{where}: inertia with principal moments {principal_moments(I)} {what} ({FIX_HINT})")
    return project_inertia(mass, I)
