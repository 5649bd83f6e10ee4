"""A per-model workspace for fast single-state calls, like Pinocchio's ``Data``.

``pbsim.aba(model, q, v, tau)`` validates its input (shape, dtype, NaN/inf, bounds, quaternion
norms; docs/reliability.md) and accepts batches; on the gymnasium humanoid it costs ~25 us a
call, ~4x Pinocchio's ``aba``, nearly all of it Python: the checks and numba's argument
dispatch of the model's and workspace's 50 arrays.  :class:`Data` keeps its own buffers and
hands the model, the workspace and the buffers to compiled code as one object (a numba
StructRef), so a call is a copy of the inputs into its buffers and one compiled call::

    data = pbsim.Data(model)
    qdd = data.aba(q, v, tau)      # (nv,), data.qdd: overwritten by the next call
    tau = data.rnea(q, v, qdd)     # data.tau
    M = data.crba(q)               # data.M (nv, nv)
    R, p = data.forward_kinematics(q)  # data.Rw (nb, 3, 3), data.pw (nb, 3): body poses in world

What the fast path checks: each input is copied into a float64 buffer of the right length
(numpy's assignment: a wrong length or a non-numeric input raises ValueError/TypeError, a scalar
fills the whole buffer).  What it does not: NaN/inf, the documented bound on entries, quaternion
norms (a zero quaternion gives NaN, not an InputError) -- use the validated functions
(``pbsim.aba`` ...) for unchecked input.  The returned arrays are the workspace's own: copy them
to keep them past the next call.  One ``Data`` serves one thread at a time.
"""

from __future__ import annotations

import numba
import numpy as np
from numba.core import types
from numba.experimental import structref

from pbsim.dynamics.aba import aba_state
from pbsim.dynamics.crba import crba_state
from pbsim.dynamics.kinematics import fk_state
from pbsim.dynamics.rnea import rnea_state
from pbsim.dynamics.workspace import make_work


@structref.register
class DataRefType(types.StructRef):
    def preprocess_fields(self, fields):
        return tuple((n, types.unliteral(t)) for n, t in fields)


class DataRef(structref.StructRefProxy):
    """The compiled side of :class:`Data`: model arrays, workspace and buffers as one object."""


structref.define_proxy(DataRef, DataRefType, ["m", "w", "q", "v", "u", "zero", "qdd", "tau", "M"])

_JIT = dict(cache=True, error_model="numpy")


@numba.njit(**_JIT)
def _new_ref(m, w, q, v, u, zero, qdd, tau, M):
    """A :class:`DataRef` (a cached constructor: the proxy's own is compiled in every process)."""
    return DataRef(m, w, q, v, u, zero, qdd, tau, M)


@numba.njit(**_JIT)
def _aba(d):
    aba_state(d.m, d.w, 0, d.q, d.v, d.u, d.zero, d.qdd)


@numba.njit(**_JIT)
def _rnea(d):
    rnea_state(d.m, d.w, 0, d.q, d.v, d.u, d.tau)


@numba.njit(**_JIT)
def _crba(d):
    crba_state(d.m, d.w, 0, d.q, d.M)


@numba.njit(**_JIT)
def _fk(d):
    fk_state(d.m, d.w, 0, d.q)


class Data:
    """Buffers and workspace for single-state ``aba``, ``rnea``, ``crba``, ``forward_kinematics``
    of ``model`` (module doc: what the fast path checks and what it does not)."""

    __slots__ = ("model", "q", "v", "u", "qdd", "tau", "M", "Rw", "pw", "_w", "_ref")

    def __init__(self, model):
        self.model = model
        nq, nv = model.nq, model.nv
        self._w = make_work(model, 1)
        self.q, self.v, self.u = np.zeros(nq), np.zeros(nv), np.zeros(nv)
        self.qdd, self.tau, self.M = np.zeros(nv), np.zeros(nv), np.zeros((nv, nv))
        self.Rw, self.pw = self._w.Rw[0, : model.nb], self._w.pw[0, : model.nb]
        self.q[:] = model.neutral()
        self._ref = _new_ref(model.k, self._w, self.q, self.v, self.u, np.zeros(nv), self.qdd, self.tau, self.M)

    def aba(self, q, v, tau):
        """Forward dynamics ``qdd`` (:func:`pbsim.aba`), into and returning ``self.qdd``."""
        self.q[:] = q
        self.v[:] = v
        self.u[:] = tau
        _aba(self._ref)
        return self.qdd

    def rnea(self, q, v, qdd):
        """Inverse dynamics ``tau`` (:func:`pbsim.rnea`), into and returning ``self.tau``."""
        self.q[:] = q
        self.v[:] = v
        self.u[:] = qdd
        _rnea(self._ref)
        return self.tau

    def crba(self, q):
        """The mass matrix (:func:`pbsim.crba`), into and returning ``self.M``."""
        self.q[:] = q
        _crba(self._ref)
        return self.M

    def forward_kinematics(self, q):
        """World rotation ``Rw`` (nb, 3, 3) and position ``pw`` (nb, 3) of every body frame
        (:func:`pbsim.forward_kinematics` as 4x4 poses)."""
        self.q[:] = q
        _fk(self._ref)
        return self.Rw, self.pw
