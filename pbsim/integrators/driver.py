"""The generic CPU drivers of the integrator contract (:class:`pbsim.integrators.base.StepSpec`).

A method provides one per-trajectory step kernel

    step(m, s, c, w, sw, x, b, q, v, dt, qn, vn)

(model, scene arrays, control arrays, dynamics workspace, step scratch, the method's own scratch
``x``, trajectory index, state rows in, state rows out).  The drivers below loop it over the
batch; :func:`pbsim.jit.bind` makes a copy of a driver calling a given step, so a new
method never edits them.  ``pbsim.backends.cuda`` runs the same step kernels on the GPU.
"""

from __future__ import annotations

import math

import numpy as np
from numba import prange

from pbsim.jit import Variants, bind, kernel, unused
from pbsim.contact.depth import max_depth_state
from pbsim.dynamics.energy import energy_state

_step = unused  # rebound per method by bind(driver, _step=...)


@kernel
def copy_rows(m, b, qn, vn, q, v):
    """(q[b], v[b]) <- (qn[b], vn[b])."""
    for j in range(m.nq):
        q[b, j] = qn[b, j]
    for j in range(m.nv):
        v[b, j] = vn[b, j]


@kernel
def state_flags(m, b, q, v, vlim):
    """``(finite, fast)`` of row ``b``: q and v finite; a finite joint speed beyond ``vlim``
    (the divergence rule's per-row tests, :mod:`pbsim.integrators.divergence`)."""
    finite = True
    for j in range(m.nq):
        if not math.isfinite(q[b, j]):
            finite = False
    fast = False
    for j in range(m.nv):
        a = v[b, j]
        if not math.isfinite(a):
            finite = False
        elif abs(a) > vlim:
            fast = True
    return finite, fast


@kernel(parallel=True)
def rollout_batch(
    m,
    s,
    c,
    w,
    sw,
    x,
    q,
    v,
    qn,
    vn,
    e,
    info,
    dt,
    k0,
    nsteps,
    every,
    Q,
    V,
    E,
    e_ref,
    thr,
    vlim,
    live,
    deep,
    maxpen,
    pen,
    iters,
    fbs,
    stop,
    lite,
):
    """Steps ``k0 + 1 .. k0 + nsteps`` of every trajectory, the state kept in (q, v) and every
    ``every``-th frame recorded into ``Q[k // every, b], V[...], E[...]`` (energy K + U after the
    step): ``pbsim.rollout``'s step loop in compiled code (no per-step Python).

    After each step the shared divergence rule (:mod:`pbsim.integrators.divergence`) is applied
    to the row as its per-trajectory form reads: non-finite q or v, a joint speed beyond
    ``vlim``, or ``K + U - e_ref[b] > thr[b]`` (``thr``: the rule's factor x (the model's energy
    scale + what the control can add), from Python).  A row stops *before* committing a step
    (``stop[b] = k``, its (q, v) left at step k - 1) on an event the caller's Python step must
    handle: a live row (``live[b]``) that diverges, a step whose solver did not converge
    (``info[b, 2] < 0.5``; ``info`` is the method's (B, 4) [iterations, residual, converged,
    objective] or ones), or, with ``deep``, a contact point deeper than ``maxpen`` (contact points:
    the deepest point is measured after every step, ``pen[b]`` keeps the largest of the live
    rows).  A row already diverged (on_nan="stop") that diverges again keeps its state and
    records NaN energy, as the Python loop does.  ``iters[b]`` adds up ``info[b, 0]``, ``fbs[b]``
    the steps whose kernel ran the sub-step fallback (``info[b, 4]`` > 1, methods with
    ``StepSpec.fallback``).

    With ``lite`` it is the bare loop of :data:`step_batch` and :data:`steps_batch`: every step
    committed to (q, v) (qn, vn hold the last), the energy after the last step in ``e``, no rule,
    no record (``info``, ``Q``..``stop`` untouched).  One compiled loop serves all three, so a
    method compiles once per feature set, not once per driver."""
    for i in prange(q.shape[0]):
        b = np.int64(i)
        stop[b] = 0
        for k in range(k0 + 1, k0 + nsteps + 1):
            _step(m, s, c, w, sw, x, b, q, v, dt, qn, vn)
            if lite:
                if k == k0 + nsteps:
                    energy_state(m, w, b, qn[b], vn[b], e[b])
                copy_rows(m, b, qn, vn, q, v)
                continue
            energy_state(m, w, b, qn[b], vn[b], e[b])
            en = e[b, 0] + e[b, 1]
            finite, fast = state_flags(m, b, qn, vn, vlim)
            gone = (not finite) or fast or (en - e_ref[b] > thr[b])
            if info[b, 2] <= 0.5 or (live[b] and gone):
                stop[b] = k
                break
            d = 0.0
            if s.npts > 0 or s.nitem > 0:
                d = max_depth_state(m, s, w, b, qn[b])
            if live[b]:
                if deep and d > maxpen:
                    stop[b] = k
                    break
                if d > pen[b]:
                    pen[b] = d
            iters[b] += info[b, 0]
            if info.shape[1] > 4 and info[b, 4] > 1.5:
                fbs[b] += 1.0
            if gone:  # a diverged row stays frozen at its last good state
                en = np.nan
            else:
                copy_rows(m, b, qn, vn, q, v)
            if k % every == 0:
                r = k // every
                for j in range(m.nq):
                    Q[r, b, j] = q[b, j]
                for j in range(m.nv):
                    V[r, b, j] = v[b, j]
                E[r, b] = en


class _LiteDriver:
    """A driver the compiled loop :func:`rollout_batch` runs in its ``lite`` mode (the name kept
    for callers: ``driver(step_batch, step, ...)``)."""

    def __init__(self, name: str, doc: str):
        self.__name__ = self.__qualname__ = name
        self.__doc__ = doc

    def __repr__(self):
        return f"<pbsim driver {self.__name__} (rollout_batch, lite)>"


step_batch = _LiteDriver(
    "step_batch",
    """``(m, s, c, w, sw, x, q, v, dt, qn, vn, e)``: one step of every trajectory into (qn, vn)
    and the energy [kinetic, potential] after it; q and v are left as they are.""",
)
steps_batch = _LiteDriver(
    "steps_batch",
    """``(m, s, c, w, sw, x, q, v, qn, vn, dt, nsteps)``: ``nsteps`` steps of every trajectory;
    the state stays in (q, v) (no energy, no per-step Python).""",
)


class _LiteCall:
    """:data:`step_batch` / :data:`steps_batch` bound to a step: the arguments of the driver,
    passed on to the bound :func:`rollout_batch` with ``lite`` (bookkeeping arrays of the batch
    size, untouched by the kernel, are made here)."""

    def __init__(self, which: _LiteDriver, loop):
        self.which, self.loop = which, loop
        self.py_func = loop.py_func  # the bound step, as drivers expose it (``__globals__["_step"]``)

    def __getattr__(self, name):  # the rest as the loop's (``rows``: its per-row kernel)
        return getattr(self.loop, name)

    def __call__(self, *a):
        if self.which is step_batch:
            m, s, c, w, sw, x, q, v, dt, qn, vn, e = a
            q, v, nsteps = np.array(q, np.float64, order="C"), np.array(v, np.float64, order="C"), 1
        else:
            m, s, c, w, sw, x, q, v, qn, vn, dt, nsteps = a
            e = np.empty((q.shape[0], 2))
        B = q.shape[0]
        key = (B, m.nq, m.nv)
        if key not in _LITE_ARGS:  # arrays the lite loop never reads or writes, made once per shape
            if len(_LITE_ARGS) > 16:
                _LITE_ARGS.clear()
            z = np.zeros(B)
            _LITE_ARGS[key] = (
                np.ones((B, 4)),
                np.zeros((1, B, m.nq)),
                np.zeros((1, B, m.nv)),
                np.zeros((1, B)),
                z,
                np.zeros(B, np.bool_),
                np.zeros(B, np.int64),
            )
        ones, Q, V, E, z, live, stop = _LITE_ARGS[key]
        self.loop(
            m,
            s,
            c,
            w,
            sw,
            x,
            q,
            v,
            qn,
            vn,
            e,
            ones,
            float(dt),
            0,
            int(nsteps),
            1,
            Q,
            V,
            E,
            z,
            z,
            0.0,
            live,
            False,
            0.0,
            z,
            z,
            z,
            stop,
            True,
        )


_LITE_ARGS: dict = {}


_VARIANTS: dict = {}


def driver(which, step, features: dict | None = None, used: dict | None = None, reuse: bool = True):
    """``rollout_batch``, ``step_batch`` or ``steps_batch`` (``which``) bound to ``step``; with
    ``features`` (the method's :class:`~pbsim.jit.Variants` map) the build that compiles only the
    features in ``used`` (``reuse``: or an already compiled build of more, :meth:`Variants.__call__`).
    The latter two run the first (its ``lite`` mode): one compilation per method and feature set
    serves ``rollout``, ``Integrator.step`` and ``CpuBatch``."""
    if isinstance(which, _LiteDriver):
        return _LiteCall(which, driver(rollout_batch, step, features, used, reuse))
    d = bind(which, _step=step)
    if not features:
        return d
    key = (id(d), tuple(sorted(features)))  # one Variants per feature map (a caller may name fewer features)
    if key not in _VARIANTS:
        _VARIANTS[key] = Variants(d, features)
    return _VARIANTS[key](reuse=reuse, **(used or {}))
