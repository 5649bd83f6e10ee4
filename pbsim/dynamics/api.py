"""Public dynamics API: validated inputs, single state or batch (leading axis B)."""
from __future__ import annotations

import numpy as np

from pbsim.dynamics.aba import aba_batch
from pbsim.dynamics.crba import crba_batch
from pbsim.dynamics.energy import energy_batch, kinetic_energy_gradient_batch
from pbsim.dynamics.jacobian import point_jacobian_batch
from pbsim.dynamics.kinematics import fk_batch
from pbsim.dynamics.liegroup import difference_batch, integrate_batch
from pbsim.dynamics.rnea import rnea_batch
from pbsim.dynamics.rnea_derivatives import rnea_derivatives_batch, rnea_derivatives_work_for
from pbsim.dynamics.workspace import work_for
from pbsim.errors import InputError


def as_batch(x, n: int, name: str, batch: int | None = None):
    """``x`` as a C-contiguous float64 (B, n) array; returns (array, was_single)."""
    if type(x) is np.ndarray and x.dtype == np.float64:  # fast path: no conversion
        a = x
    else:
        try:
            a = np.asarray(x, dtype=np.float64)
        except (TypeError, ValueError) as e:
            raise InputError(f"{name} must be a numeric array: {e}") from None
    single = a.ndim == 1
    if single:
        a = a[None, :]
    if a.ndim != 2 or a.shape[1] != n:
        raise InputError(f"{name} must have shape ({n},) or (B, {n}); got {np.shape(x)}")
    if batch is not None and a.shape[0] != batch:
        if a.shape[0] == 1:
            a = np.broadcast_to(a, (batch, n))
        else:
            raise InputError(f"{name} has batch size {a.shape[0]}, expected {batch}")
    if not np.isfinite(a.sum()) and not np.all(np.isfinite(a)):  # sum: one cheap pass; NaN/inf propagate
        bad = np.argwhere(~np.isfinite(a))[0]
        where = f"[{bad[1]}]" if single else f"[{bad[0]}, {bad[1]}]"
        raise InputError(f"{name}{where} is {a[tuple(bad)]} (NaN or inf)")
    if not a.flags.c_contiguous:
        a = np.ascontiguousarray(a)
    return a, single


def _zeros(model):
    z = model.__dict__.get("_zeros_nv")
    if z is None:
        z = model.__dict__["_zeros_nv"] = np.zeros(model.nv)
    return z


def _out(x, single):
    return x[0] if single else x


def forward_kinematics(model, q):
    """World pose of every body: (nb, 4, 4), or (B, nb, 4, 4) for a batch."""
    Q, single = as_batch(q, model.nq, "q")
    w = work_for(model, Q.shape[0])
    fk_batch(model.k, w, Q)
    B = Q.shape[0]
    T = np.zeros((B, model.nb, 4, 4))
    T[:, :, :3, :3] = w.Rw[:B]
    T[:, :, :3, 3] = w.pw[:B]
    T[:, :, 3, 3] = 1.0
    return _out(T, single)


def frame_poses(model, q):
    """World pose of every frame (robot-file link) as a dict name -> 4x4 (single state)."""
    T = forward_kinematics(model, q)
    out = {}
    for f in model.frames:
        Tf = np.eye(4)
        Tf[:3, :3] = f.R
        Tf[:3, 3] = f.p
        out[f.name] = Tf if f.body < 0 else T[f.body] @ Tf
    return out


def crba(model, q):
    """Joint-space mass matrix (nv, nv) or (B, nv, nv)."""
    Q, single = as_batch(q, model.nq, "q")
    M = np.empty((Q.shape[0], model.nv, model.nv))
    crba_batch(model.k, work_for(model, Q.shape[0]), Q, M)
    return _out(M, single)


def rnea(model, q, v, qdd):
    """Inverse dynamics: tau = M(q) qdd + C(q, v) v + g(q)."""
    Q, single = as_batch(q, model.nq, "q")
    B = Q.shape[0]
    V, _ = as_batch(v, model.nv, "v", B)
    A, _ = as_batch(qdd, model.nv, "qdd", B)
    tau = np.empty((B, model.nv))
    rnea_batch(model.k, work_for(model, B), Q, V, A, tau)
    return _out(tau, single)


def aba(model, q, v, tau):
    """Forward dynamics: qdd = M(q)^-1 (tau - C(q, v) v - g(q))."""
    Q, single = as_batch(q, model.nq, "q")
    B = Q.shape[0]
    V, _ = as_batch(v, model.nv, "v", B)
    T, _ = as_batch(tau, model.nv, "tau", B)
    qdd = np.empty((B, model.nv))
    aba_batch(model.k, work_for(model, B), Q, V, T, _zeros(model), qdd)
    return _out(qdd, single)


def energy(model, q, v):
    """(kinetic, potential) per state: shape (2,) or (B, 2)."""
    Q, single = as_batch(q, model.nq, "q")
    B = Q.shape[0]
    V, _ = as_batch(v, model.nv, "v", B)
    e = np.empty((B, 2))
    energy_batch(model.k, work_for(model, B), Q, V, e)
    return _out(e, single)


def rnea_derivatives(model, q, v, qdd):
    """``(d tau/dq, d tau/dv)`` of :func:`rnea` (gravity included), each (nv, nv) or (B, nv, nv);
    rows are tau, columns the tangent ``q (+) dq`` (:func:`integrate`'s; for ball/free joints the
    same matrix as Pinocchio's ``computeRNEADerivatives``).  O(n * depth).  A model with coupled
    mimic joints is differentiated in its full coordinates; its reduced Jacobians are
    ``G.T @ d @ G`` with ``G, _ = model.mimic_coupling()`` (the coupling is linear)."""
    Q, single = as_batch(q, model.nq, "q")
    B = Q.shape[0]
    V, _ = as_batch(v, model.nv, "v", B)
    A, _ = as_batch(qdd, model.nv, "qdd", B)
    dq = np.empty((B, model.nv, model.nv))
    dv = np.empty((B, model.nv, model.nv))
    rnea_derivatives_batch(model.k, rnea_derivatives_work_for(model, B), Q, V, A, dq, dv)
    return _out(dq, single), _out(dv, single)


def kinetic_energy_gradient(model, q, v):
    """``(dK/dq, dK/dv)`` of the kinetic energy ``K = 1/2 v^T M(q) v``: (nv,) each or (B, nv);
    dK/dq along the tangent ``q (+) dq`` at fixed v, dK/dv = M(q) v.  O(n)."""
    Q, single = as_batch(q, model.nq, "q")
    B = Q.shape[0]
    V, _ = as_batch(v, model.nv, "v", B)
    gq = np.empty((B, model.nv))
    gv = np.empty((B, model.nv))
    kinetic_energy_gradient_batch(model.k, work_for(model, B), Q, V, gq, gv)
    return _out(gq, single), _out(gv, single)


def point_jacobian(model, q, body, point=(0.0, 0.0, 0.0)):
    """(6, nv) Jacobian [angular; linear] of a point fixed on ``body`` (index or name), world axes."""
    if isinstance(body, str):
        body = model.body_index(body)
    if not 0 <= int(body) < model.nb:
        raise InputError(f"body index {body} out of range [0, {model.nb})")
    Q, single = as_batch(q, model.nq, "q")
    P, _ = as_batch(point, 3, "point")
    J = np.empty((Q.shape[0], 6, model.nv))
    point_jacobian_batch(model.k, work_for(model, Q.shape[0]), Q, int(body), P[0], J)
    return _out(J, single)


def integrate(model, q, dv):
    """q (+) dv on the configuration manifold (quaternions stay unit)."""
    Q, single = as_batch(q, model.nq, "q")
    D, _ = as_batch(dv, model.nv, "dv", Q.shape[0])
    out = np.empty_like(Q)
    integrate_batch(model.k, work_for(model, Q.shape[0]), Q, D, out)
    return _out(out, single)


def difference(model, q0, q1):
    """The tangent vector dv with integrate(q0, dv) = q1."""
    Q0, single = as_batch(q0, model.nq, "q0")
    Q1, _ = as_batch(q1, model.nq, "q1", Q0.shape[0])
    out = np.empty((Q0.shape[0], model.nv))
    difference_batch(model.k, work_for(model, Q0.shape[0]), Q0, Q1, out)
    return _out(out, single)
