"""One environment step of every row in compiled code: the vector environment's fast path.

:class:`pbsim.envs.core._Core` steps its rows through :class:`EnvStep` when the method has a step
kernel, the task supplies a compiled task kernel (``task_kernel``: reward, termination and
observation of one row, see :func:`pbsim.envs.tasks.walker_task`) and the control is one this
module maps (``torque``, ``spd``, ``pd``, or ``ctrl`` on motor actuators).  One call then does
what the Python path does around the batched kernel call, row by row:

1. the action row into the control arrays (the model's motors: ``gear * clip(gain * clip(u,
   ctrlrange), forcerange)`` as :func:`pbsim.control.actuators.actuator_targets`; torques on the
   actuated DOFs; or joint targets ``q_nominal + a * scale``);
2. ``frame_skip`` steps of the method's step kernel;
3. the shared divergence rule (:mod:`pbsim.integrators.divergence`, as ``check_run`` reads it):
   non-finite q or v, a joint speed beyond the bound, or an energy gain ``K + U - e_start``
   beyond the factor x the model's energy scale, plus what the control can add
   (``sum |tau| L + 1/2 kp L^2``) when the first bound is crossed;
4. the task kernel on the new state (zeros where it is non-finite; reward 0 there), and the
   divergence ORed into ``terminated``.

Small batches run on the calling thread through one cached ``njit`` entry taking a StructRef
(no per-call unboxing of the model's ~60 arrays: ~20 us per environment step of the hopper
instead of ~200); larger ones through a threaded batch driver over the same row kernel.
The results equal the Python path's (tests/envs/test_envs.py).
"""

from __future__ import annotations

import math
from collections import namedtuple

import numba
import numpy as np
from numba import prange
from numba.core import types
from numba.experimental import structref

from pbsim.jit import bind, entry, kernel, python_source, specialize, unused
from pbsim.dynamics.energy import energy_state
from pbsim.integrators.driver import copy_rows, state_flags

# amode: how an action row becomes control
A_MOTORS, A_TORQUE, A_TARGETS = 0, 1, 2
# the batch at which the threaded driver takes over from the single-thread entry
THREADED_MIN_BATCH = 32

# ``ek``: the environment's arrays.  act_*: the actuators (motors) of "ctrl"; dof_v, dof_q, scale:
# the actuated DOFs of torque / targets; q_nominal; prm: the task kernel's parameters; qb, vb: the
# rows before the step; qz, vz: zero rows; e_start (B,): reference energy of each row's episode
# start; L (nv,): the DOF ranges of the rule's actuator bound; lim: [speed limit, energy factor,
# energy scale]; amode (1,) int
EnvK = namedtuple(
    "EnvK",
    "amode act_dof act_gear act_gain act_ctrl act_force dof_v dof_q scale q_nominal prm qb vb qz vz e_start L lim",
)

_step = unused  # rebound per method (specialize)
_task = unused  # rebound per task (specialize)
_row = unused  # rebound per (method, task) (bind / entry)


@kernel
def actuate_row(m, c, ek, b, a):
    """Action row ``a`` into row ``b`` of the control arrays (see the module docstring)."""
    mode = ek.amode[0]
    if mode == A_MOTORS:
        for j in range(m.nv):
            c.tau[b, j] = 0.0
        for k in range(ek.act_dof.shape[0]):
            u = min(max(a[k], ek.act_ctrl[k, 0]), ek.act_ctrl[k, 1])
            f = min(max(ek.act_gain[k] * u, ek.act_force[k, 0]), ek.act_force[k, 1])
            c.tau[b, ek.act_dof[k]] += ek.act_gear[k] * f
    elif mode == A_TORQUE:
        for j in range(m.nv):
            c.tau[b, j] = 0.0
        for k in range(ek.dof_v.shape[0]):
            c.tau[b, ek.dof_v[k]] = a[k] * ek.scale[k]
    else:
        for j in range(m.nq):
            c.q_ref[b, j] = ek.q_nominal[j]
        for k in range(ek.dof_q.shape[0]):
            c.q_ref[b, ek.dof_q[k]] += a[k] * ek.scale[k]


@kernel
def control_energy(m, c, ek, b):
    """What the row's control can add across the DOF ranges L: ``sum |tau| L + 1/2 kp L^2``
    (:func:`pbsim.integrators.divergence.actuator_energy`)."""
    bt = b % c.tau.shape[0]
    bk = b % c.kp.shape[0]
    out = 0.0
    for j in range(m.nv):
        out += abs(c.tau[bt, j]) * ek.L[j]
    if c.mode != 0:
        for j in range(m.nv):
            out += 0.5 * abs(c.kp[bk, j]) * ek.L[j] * ek.L[j]
    return out if math.isfinite(out) else 0.0


@kernel
def env_row(m, s, c, w, sw, x, b, q, v, qn, vn, ek, A, nsteps, dt, dt_env, obs, out, e):
    """One environment step of row ``b``: ``out[b]`` = [reward, terminated, diverged, info...]."""
    actuate_row(m, c, ek, b, A[b])
    for j in range(m.nq):
        ek.qb[b, j] = q[b, j]
    for j in range(m.nv):
        ek.vb[b, j] = v[b, j]
    for _k in range(nsteps):
        _step(m, s, c, w, sw, x, b, q, v, dt, qn, vn)
        copy_rows(m, b, qn, vn, q, v)
    finite, fast = state_flags(m, b, q, v, ek.lim[0])
    fast = fast and finite
    high = False
    if finite and not fast:
        energy_state(m, w, b, q[b], v[b], e[b])
        gain = e[b, 0] + e[b, 1] - ek.e_start[b]
        if gain > ek.lim[1] * ek.lim[2]:
            high = gain > ek.lim[1] * (ek.lim[2] + control_energy(m, c, ek, b))
    if finite:
        _task(m, w, ek.prm, ek.qb[b], ek.vb[b], q[b], v[b], A[b], dt_env, obs[b], out[b])
    else:
        _task(m, w, ek.prm, ek.qb[b], ek.vb[b], ek.qz[b], ek.vz[b], A[b], dt_env, obs[b], out[b])
        out[b, 0] = 0.0
    bad = (not finite) or fast or high
    out[b, 2] = 1.0 if bad else 0.0
    if bad:
        out[b, 1] = 1.0


@kernel(parallel=True)
def env_batch(m, s, c, w, sw, x, q, v, qn, vn, ek, A, nsteps, dt, dt_env, obs, out, e):
    """:func:`env_row` of every row (threaded)."""
    for i in prange(q.shape[0]):
        b = np.int64(i)
        _row(m, s, c, w, sw, x, b, q, v, qn, vn, ek, A, nsteps, dt, dt_env, obs, out, e)


@structref.register
class EnvRefType(types.StructRef):
    def preprocess_fields(self, fields):
        return tuple((n, types.unliteral(t)) for n, t in fields)


class EnvRef(structref.StructRefProxy):
    """The compiled side of :class:`EnvStep`: model, scene, control, scratch and rows as one object."""


structref.define_proxy(EnvRef, EnvRefType, ["m", "s", "c", "w", "sw", "x", "q", "v", "qn", "vn", "ek", "e"])


@numba.njit(cache=True, error_model="numpy")
def _new_env_ref(m, s, c, w, sw, x, q, v, qn, vn, ek, e):
    return EnvRef(m, s, c, w, sw, x, q, v, qn, vn, ek, e)


def env_step_all(d, A, nsteps, dt, dt_env, obs, out):
    """:func:`env_row` of every row of ``d`` (an :class:`EnvRef`) on the calling thread."""
    for b in range(d.q.shape[0]):
        _row(d.m, d.s, d.c, d.w, d.sw, d.x, b, d.q, d.v, d.qn, d.vn, d.ek, A, nsteps, dt, dt_env, obs, out, d.e)


class EnvStep:
    """The compiled environment step over a :class:`pbsim.backends.cpu.CpuBatch`'s buffers.

    ``batch``: the CpuBatch (its q, v, scratch and control arrays are stepped in place);
    ``task_kernel``: ``f(m, w, prm, qb, vb, q, v, a, dt_env, obs, out)`` writing one row's
    observation and ``out`` = [reward, terminated, (diverged: left to the caller), info...];
    ``prm``: its float parameters; ``n_out``: 3 + the number of info columns; ``action``:
    ``(amode, arrays)`` from :func:`action_map`."""

    def __init__(self, batch, task_kernel, prm, n_obs: int, n_out: int, amode: int, arrays: dict, lim, L):
        from pbsim.integrators.driver import driver, steps_batch

        m, B = batch.model, batch.B
        self.batch, self.B = batch, B
        spec = batch.spec
        # exact: the env's own entry compiles it (a compiled build of more features would save nothing)
        step = driver(
            steps_batch, spec.step, *spec.variant(batch.I, batch.c, batch.s), reuse=False
        ).py_func.__globals__["_step"]
        names = (python_source(step).__qualname__, python_source(task_kernel).__qualname__)
        tag = "env_" + "_".join(names).replace(".", "_")
        row = specialize(env_row, tag, _step=step, _task=task_kernel)
        self._one = entry(env_step_all, _row=row)
        self._threaded = bind(env_batch, _row=row)
        f64 = np.float64
        self.ek = EnvK(
            np.array([amode], np.int64),
            np.asarray(arrays.get("act_dof", np.zeros(0, np.int64)), np.int64),
            *(np.ascontiguousarray(arrays.get(k, np.zeros(0)), f64) for k in ("act_gear", "act_gain")),
            *(
                np.ascontiguousarray(arrays.get(k, np.zeros((0, 2))), f64).reshape(-1, 2)
                for k in ("act_ctrl", "act_force")
            ),
            np.asarray(arrays.get("dof_v", np.zeros(0, np.int64)), np.int64),
            np.asarray(arrays.get("dof_q", np.zeros(0, np.int64)), np.int64),
            np.ascontiguousarray(arrays.get("scale", np.zeros(0)), f64),
            np.ascontiguousarray(arrays.get("q_nominal", np.zeros(m.nq)), f64),
            np.ascontiguousarray(prm, f64),
            np.zeros((B, m.nq)),
            np.zeros((B, m.nv)),
            np.zeros((B, m.nq)),
            np.zeros((B, m.nv)),
            np.zeros(B),
            np.ascontiguousarray(L, f64),
            np.ascontiguousarray(lim, f64),
        )
        self.e = np.zeros((B, 2))
        self.obs = np.zeros((B, int(n_obs)))
        self.out = np.zeros((B, int(n_out)))
        self._ref = None
        b = batch  # the batch's arrays are stepped in place: bound once
        self._head = (m.k, b.s, b.c, b.w, b.sw, b.x, b.q, b.v, b.qn, b.vn, self.ek)

    @property
    def e_start(self) -> np.ndarray:
        return self.ek.e_start

    def __call__(self, A: np.ndarray, nsteps: int, dt: float, dt_env: float):
        """Step every row under the (B, n_action) float64 action ``A``; fills :attr:`obs` and :attr:`out`."""
        b = self.batch
        if self.B >= THREADED_MIN_BATCH and numba.get_num_threads() > 1:
            self._threaded(*self._head, A, nsteps, dt, dt_env, self.obs, self.out, self.e)
        else:
            if self._ref is None:
                self._ref = _new_env_ref(*self._head, self.e)
            self._one(self._ref, A, nsteps, dt, dt_env, self.obs, self.out)
        b.t += nsteps * dt
