"""Public dynamics API: validated inputs, single state or batch (leading axis B)."""
from __future__ import annotations

import numpy as np

from pbsim.dynamics.aba import aba_batch
from pbsim.dynamics.crba import crba_batch
from pbsim.dynamics.energy import energy_batch, kinetic_energy_gradient_batch
from pbsim.dynamics.fluid import fluid_batch
from pbsim.dynamics.gravcomp import gravcomp_batch
from pbsim.dynamics.jacobian import point_jacobian_batch
from pbsim.dynamics.kinematics import fk_batch
from pbsim.dynamics.liegroup import difference_batch, integrate_batch
from pbsim.dynamics.rnea import rnea_batch
from pbsim.dynamics.rnea_derivatives import rnea_derivatives_batch, rnea_derivatives_work_for
from pbsim.dynamics.workspace import work_for
from pbsim.errors import InputError


# Documented bound on every entry of an array given to the public API (q, v, tau, qdd, ...), in
# SI units (docs/reliability.md): beyond it products such as v^2 * inertia overflow, and no
# robot state is that large.  A quaternion (ball joint, free joint's rotation) must have a norm
# of at least MIN_QUAT_NORM (an all-zero quaternion is no rotation).
MAX_VALUE = 1e10
MIN_QUAT_NORM = 1e-6


def as_batch(x, n: int, name: str, batch: int | None = None):
    """``x`` as a C-contiguous float64 (B, n) array; returns (array, was_single).

    InputError when it is not numeric (complex included), has the wrong shape, or holds NaN,
    inf or an entry beyond :data:`MAX_VALUE`."""
    if type(x) is np.ndarray and x.dtype == np.float64:  # fast path: no conversion
        a = x
    else:
        if np.iscomplexobj(x):
            raise InputError(f"{name} must be real, got a complex array")
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
    if not np.abs(a).max(initial=0.0) <= MAX_VALUE:  # one pass; NaN fails the comparison
        bad = np.argwhere(~(np.abs(a) <= MAX_VALUE))[0]
        where = f"[{bad[1]}]" if single else f"[{bad[0]}, {bad[1]}]"
        x = a[tuple(bad)]
        what = "NaN or inf" if not np.isfinite(x) else f"beyond the bound {MAX_VALUE:g}, docs/reliability.md"
        raise InputError(f"{name}{where} is {x} ({what})")
    if not a.flags.c_contiguous:
        a = np.ascontiguousarray(a)
    return a, single


def _quat_index(model):
    """(k, 4) indices into q of the model's quaternions (ball joints, free joints' rotations)."""
    idx = model.__dict__.get("_quat_index")
    if idx is None:
        rows = []
        for i in range(model.nb):
            jt, iq = int(model.jtype[i]), int(model.iq[i])
            if jt == 2:
                rows.append(range(iq, iq + 4))
            elif jt == 3:
                rows.append(range(iq + 3, iq + 7))
        idx = model.__dict__["_quat_index"] = np.array(rows, dtype=np.int64).reshape(-1, 4)
    return idx


def as_q(model, q, name: str = "q", batch: int | None = None):
    """:func:`as_batch` for a configuration: also InputError when a quaternion is (nearly) zero."""
    Q, single = as_batch(q, model.nq, name, batch)
    idx = _quat_index(model)
    if idx.size:
        nrm = np.sqrt((Q[:, idx] ** 2).sum(axis=2))  # (B, k)
        if not nrm.min() >= MIN_QUAT_NORM:
            b, k = np.argwhere(~(nrm >= MIN_QUAT_NORM))[0]
            where = f"[{idx[k, 0]}:{idx[k, 3] + 1}]" if single else f"[{b}, {idx[k, 0]}:{idx[k, 3] + 1}]"
            raise InputError(f"{name}{where} is a quaternion of norm {nrm[b, k]:.3g} (at least "
                             f"{MIN_QUAT_NORM:g} needed; (1, 0, 0, 0) is the identity)")
    return Q, single


def _zeros(model):
    z = model.__dict__.get("_zeros_nv")
    if z is None:
        z = model.__dict__["_zeros_nv"] = np.zeros(model.nv)
    return z


def _out(x, single):
    return x[0] if single else x


def forward_kinematics(model, q):
    """World pose of every body: (nb, 4, 4), or (B, nb, 4, 4) for a batch."""
    Q, single = as_q(model, q)
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
    Q, single = as_q(model, q)
    M = np.empty((Q.shape[0], model.nv, model.nv))
    crba_batch(model.k, work_for(model, Q.shape[0]), Q, M)
    return _out(M, single)


def rnea(model, q, v, qdd):
    """Inverse dynamics: tau = M(q) qdd + C(q, v) v + g(q)."""
    Q, single = as_q(model, q)
    B = Q.shape[0]
    V, _ = as_batch(v, model.nv, "v", B)
    A, _ = as_batch(qdd, model.nv, "qdd", B)
    tau = np.empty((B, model.nv))
    rnea_batch(model.k, work_for(model, B), Q, V, A, tau)
    return _out(tau, single)


def aba(model, q, v, tau):
    """Forward dynamics: qdd = M(q)^-1 (tau - C(q, v) v - g(q))."""
    Q, single = as_q(model, q)
    B = Q.shape[0]
    V, _ = as_batch(v, model.nv, "v", B)
    T, _ = as_batch(tau, model.nv, "tau", B)
    qdd = np.empty((B, model.nv))
    aba_batch(model.k, work_for(model, B), Q, V, T, _zeros(model), qdd)
    return _out(qdd, single)


def gravcomp(model, q):
    """MuJoCo's ``qfrc_gravcomp`` (nv,) or (B, nv): the generalized force of the bodies' gravity
    compensation (MJCF ``gravcomp``, :mod:`pbsim.dynamics.gravcomp`) at ``q``; zero without it.
    Not part of :func:`rnea` (as ``qfrc_bias`` in MuJoCo, it is a passive force)."""
    Q, single = as_q(model, q)
    B = Q.shape[0]
    out = np.empty((B, model.nv))
    gravcomp_batch(model.k, work_for(model, B), Q, out)
    return _out(out, single)


def fluid_force(model, q, v):
    """MuJoCo's ``qfrc_fluid`` (nv,) or (B, nv): the generalized force of the medium on the bodies
    (MJCF ``<option density viscosity wind>``, :mod:`pbsim.dynamics.fluid`) at ``(q, v)``; zero
    without one.  A passive force, as in MuJoCo."""
    Q, single = as_q(model, q)
    B = Q.shape[0]
    V, _ = as_batch(v, model.nv, "v", B)
    out = np.empty((B, model.nv))
    fluid_batch(model.k, work_for(model, B), Q, V, out)
    return _out(out, single)


def energy(model, q, v):
    """(kinetic, potential) per state: shape (2,) or (B, 2)."""
    Q, single = as_q(model, q)
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
    Q, single = as_q(model, q)
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
    Q, single = as_q(model, q)
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
    Q, single = as_q(model, q)
    P, _ = as_batch(point, 3, "point")
    J = np.empty((Q.shape[0], 6, model.nv))
    point_jacobian_batch(model.k, work_for(model, Q.shape[0]), Q, int(body), P[0], J)
    return _out(J, single)


def integrate(model, q, dv):
    """q (+) dv on the configuration manifold (quaternions stay unit)."""
    Q, single = as_q(model, q)
    D, _ = as_batch(dv, model.nv, "dv", Q.shape[0])
    out = np.empty_like(Q)
    integrate_batch(model.k, work_for(model, Q.shape[0]), Q, D, out)
    return _out(out, single)


def difference(model, q0, q1):
    """The tangent vector dv with integrate(q0, dv) = q1."""
    Q0, single = as_q(model, q0, "q0")
    Q1, _ = as_q(model, q1, "q1", Q0.shape[0])
    out = np.empty((Q0.shape[0], model.nv))
    difference_batch(model.k, work_for(model, Q0.shape[0]), Q0, Q1, out)
    return _out(out, single)
