"""Pieces shared by the velocity-level Newton-Euler baselines (``ne_dry``, ``ne_mdp``): one step is
``v+ = v* + Mt^-1 (contact impulses)``, ``v* = v + dt Mt^-1 (tau - h)``, ``q+ = q (+) dt v+`` with
``Mt = M(q) + diag(arm)`` factored by :func:`pbsim.optim.linalg.cholesky_factor`.

Not a method: no ``register`` here (the registry's discovery imports it like a method's module).
"""

from __future__ import annotations

import numpy as np

from pbsim.jit import kernel, unused
from pbsim.contact.query import pair_force_jt, point_force_jt
from pbsim.control.solve import clamp_joint
from pbsim.dynamics.joints import integrate_config
from pbsim.dynamics.rnea import rnea_state
from pbsim.optim.linalg import cholesky_factor, cholesky_solve

ROW_EPS = 1e-24  # a contact whose normal row has |J^T n|^2 below this cannot move (fixed body): dropped


@kernel
def bias_forces(m, w, b, q, v, zero, h):
    """``h(q, v)`` (RNEA with zero acceleration: Coriolis, centrifugal, gravity) into ``h``;
    ``zero`` (nv) is scratch set to zeros."""
    for j in range(m.nv):
        zero[j] = 0.0
    rnea_state(m, w, b, q, v, zero, h)


@kernel
def factor_or_nan(L, dv, nv):
    """Cholesky factor of ``L`` (``Mt``, lower triangle) in place; when ``Mt`` is not positive
    definite ``dv`` becomes NaN and the result is False."""
    if cholesky_factor(L, L, nv):
        return True
    for j in range(nv):
        dv[j] = np.nan
    return False


@kernel
def free_velocity(L, tau, h, v, dt, rhs, dv, vs, nv):
    """``v* = v + dt Mt^-1 (tau - h)`` from the Cholesky factor ``L`` of ``Mt`` into ``vs`` and
    ``dv`` (``rhs``: scratch)."""
    for j in range(nv):
        rhs[j] = dt * (tau[j] - h[j])
    cholesky_solve(L, rhs, dv, nv)
    for j in range(nv):
        vs[j] = v[j] + dv[j]
        dv[j] = vs[j]


@kernel
def normal_row(m, w, b, body, px, py, pz, nx, ny, nz, row, nv):
    """``row = J^T n`` of the force direction n at the world point p of ``body`` (world poses
    done); returns False when the row cannot move the point (``|J^T n|^2 <= ROW_EPS``)."""
    for j in range(nv):
        row[j] = 0.0
    point_force_jt(m, w, b, body, px, py, pz, nx, ny, nz, row)
    nn = 0.0
    for j in range(nv):
        nn += row[j] * row[j]
    return nn > ROW_EPS


@kernel
def pair_point_force_jt(m, s, w, b, k, px, py, pz, fx, fy, fz, out):
    """``out += (J_A(x) - J_B(x))^T f`` for body-body point ``k`` (f on its body A, -f on its item's
    body B: :func:`pbsim.contact.query.pair_force_jt`)."""
    it = s.pp_item[k]
    pair_force_jt(m, w, b, s.it_a[it], s.it_b[it], s.it_lca[it], px, py, pz, fx, fy, fz, out)


@kernel
def contact_force_jt(m, s, w, b, kp, px, py, pz, fx, fy, fz, out):
    """``out += J^T f`` for candidate ``kp`` of a contact set: ``kp < s.npts`` the scene point ``kp``
    (its body's point Jacobian), else the body-body point ``kp - s.npts`` (the relative Jacobian,
    :func:`pair_point_force_jt`)."""
    if kp < s.npts:
        point_force_jt(m, w, b, s.pt_body[kp], px, py, pz, fx, fy, fz, out)
    else:
        pair_point_force_jt(m, s, w, b, kp - s.npts, px, py, pz, fx, fy, fz, out)


@kernel
def contact_normal_row(m, s, w, b, kp, px, py, pz, nx, ny, nz, row, nv):
    """:func:`normal_row` of candidate ``kp`` (:func:`contact_force_jt`)."""
    for j in range(nv):
        row[j] = 0.0
    contact_force_jt(m, s, w, b, kp, px, py, pz, nx, ny, nz, row)
    nn = 0.0
    for j in range(nv):
        nn += row[j] * row[j]
    return nn > ROW_EPS


@kernel
def no_pair_candidates(*args):
    """Stands in for the body-body candidates in a run without body-body items (:data:`BODY_CONTACT`)."""
    return 0


@kernel
def no_pair_direction(*args):
    """Stands in for a body-body point's vertex direction in a run without body-body items."""
    return 0.0, 0.0, 0.0


# the body-body kernels of the velocity-level steps (the candidate kernel is the method's own, added
# by the method), compiled only into runs whose scene has body-body items (Variants)
BODY_CONTACT = {"pair_point_force_jt": unused}


@kernel
def clamp_velocity_step(m, c, sw, b, v, vn, dt):
    """Effort clamping of a velocity-level step (``Control(clamp=True)``): every stable-PD joint
    whose torque ``tc - kc (vn - v) / dt`` exceeds its limit is fixed at the limit as an explicit
    torque (its ``kc`` leaves ``sw.arm``), the explicit integrators' active set
    (:func:`pbsim.control.solve.clamp_active_set`).  Returns whether any joint changed (then
    the step is to be solved again)."""
    changed = False
    for j in range(m.nv):
        kc = sw.kc[b, j]
        if kc == 0.0:
            continue
        if clamp_joint(c, sw, b, j, sw.tc[b, j] - kc * (vn[j] - v[j]) / dt, sw.tau[b], sw.arm[b]):
            changed = True
    return changed


@kernel
def finish_step(m, w, sw, b, q, v1, dt, qn, vn, info, iterations, residual, ok, contacts):
    """``vn[b] = v1``, ``qn[b] = q (+) dt v1`` and ``info`` = [iterations, residual, converged,
    contacts]."""
    for j in range(m.nv):
        vn[b, j] = v1[j]
        sw.dq[b, j] = dt * v1[j]
    integrate_config(m, q, sw.dq[b], qn[b], w.Rj[b])
    info[0] = iterations
    info[1] = residual
    info[2] = 1.0 if ok else 0.0
    info[3] = contacts
