"""Linear-time variational integrator (paper 004): DEL equation by DRNEA, root by RIQN.

Each step finds ``q_k+1`` with ``f(q_k+1) = 0`` (Eq. 3/17, evaluated by DRNEA, Alg. 2) by

- ``riqn`` (default, Alg. 3 / Eq. 25): ``q_l+1 = q_l (+) (-dt M(q_k)^-1 e_l)``, the product
  ``M^-1 e`` by one O(n) articulated-body solve (ABA with zero velocity and gravity; the factor
  ``M(q_k) + dt diag(damping + dt kp + kd)`` is formed once per step, MABA-style);
- ``newton``: exact Jacobian (Alg. 4, O(n^2) columns) and a dense LU solve (O(n^3));
- ``broyden``: exact Jacobian at the first iteration of the step, then Broyden's rank-one
  updates of its inverse (O(n^2) per iteration).

Initial guesses (§3.3, option ``init``): "current" (IG1) q_k; "velocity" (IG2) explicit Euler
``q_k (+) dt v_k``; "semi_implicit" (IG3) semi-implicit Euler with ABA.  Convergence: the update's
max-norm (rad / m) <= ``xtol``, at most ``max_iterations`` updates; ``Diagnostics.iterations/residual/converged`` report it, and the
integrator warns (or raises, ``on_fail="raise"``) when a step did not converge.

State: each step is the forced DEL in position-momentum form, ``p_k + D1 Ld(q_k, q_k+1) + F^-_k = 0``
with ``p_k = M(q_k) v_k``: v_k is the forced discrete Legendre transform of the previous step,
``M(q_k) v_k = D2 Ld(q_k-1, q_k) + F^+_k-1`` (Marsden & West 2001, §3.2), so this is exactly the
two-step DEL ``D2 Ld(q_k-1, q_k) + D1 Ld(q_k, q_k+1) + F^+_k-1 + F^-_k = 0`` of the paper (Eq. 17 with
``F^k = F^+_k-1 + F^-_k``) without storing q_k-1.  The returned velocity is
``v_k+1 = M(q_k+1)^-1 (D2 Ld(q_k, q_k+1) + F^+_k)`` (second order; = velocity Verlet for a particle).
The returned state carries ``q_prev = q_k`` for callers that want it; the step does not read it.
Cost: ``D2 Ld`` comes from the last iteration's DRNEA pass (``mu2``, evaluated at q_l one update
before the returned q_l+1) plus the first-order change of that update (error O(tol), see vi_state),
not from an extra DRNEA pass; the factor of M(q_k+1) formed for v_k+1 is the next step's RIQN matrix
and, in a rollout, IG3's acceleration is an RNEA bias plus one solve with it (no second ABA).

Equality constraints (RIQN only): RATTLE, the impulse ``J(q_k)^T lambda`` in the DEL with
``phi(q_k+1) = 0``, RIQN's update bordered by the rows, the returned momentum projected onto
``J(q_k+1) M^-1 p = 0`` (:mod:`.step`, ``vi_eq_*``); newton and broyden refuse such a model.

Joint impulses (Lagrange-d'Alembert): over one step ``Q = dt tau - damping d_k`` (damping implicit in
``d_k = q_k+1 (-) q_k``), PD at (q_k, v_k), SPD ``-kp (e_k + d_k) - kd (d_k/dt - v_ref)`` at the next
state; split half/half, ``F^-_k = F^+_k = Q / 2``, so the returned velocity has no O(dt) bias
(e.g. zero at an SPD/gravity equilibrium, exact under a constant torque).  Armature uses the discrete
Lagrangian ``dt/2 a (d_k/dt)^2`` (exact for 1-DOF joints; for ball/free joints the Newton Jacobian
treats ``d d_k / d q_k+1`` as identity).
"""
from __future__ import annotations

import warnings

import numpy as np

from pbsim.dynamics.drnea import make_drnea_work
from pbsim.dynamics.workspace import work_for
from pbsim.errors import InputError, SimulationError, check_dt
from pbsim.integrators.base import Diagnostics, Integrator, Option, State, register
from pbsim.integrators.variational.step import METHODS, VI_BATCH, VI_ROLLOUT, make_vwork

INITS = {"current": 1, "velocity": 2, "semi_implicit": 3}  # paper 004 Sec. 3.3: IG1, IG2, IG3

@register("variational", doc="variational integrator (paper 004): DEL by DRNEA, solved by RIQN (O(n))",
          method="riqn")
class Variational(Integrator):
    """Variational integrator on the trapezoidal discrete Lagrangian (paper 004).

    Options: ``method`` ("riqn" | "newton" | "broyden"), ``init`` ("current", "velocity",
    "semi_implicit": IG1-3 of §3.3, default "semi_implicit"), ``xtol`` (max-norm of the update,
    rad/m; default 1e-12), ``max_iterations`` (default 50), ``on_fail`` ("warn" | "raise" |
    "ignore") for steps that did not converge.  The names of earlier versions (``ig`` 1-3,
    ``tol``, ``max_iter``) are still accepted.
    """

    name = "variational"
    implicit = True
    supports_equality = True  # RIQN only: RATTLE's multipliers in the step (.step, vi_eq_*)
    OPTIONS = (
        Option("method", "riqn", "root finder of the DEL equations", "str", tuple(METHODS)),
        Option("init", "semi_implicit", "initial guess of paper 004 Sec. 3.3 (IG1, IG2, IG3)", "str", tuple(INITS)),
        Option("xtol", 1e-12, "converged when the update's max-norm is below this (rad/m)", "float"),
        Option("max_iterations", 50, "solver iteration limit", "int"),
        Option("on_fail", "warn", "what a step that did not converge does", "str", ("warn", "raise", "ignore")),
        Option("ig", None, "old name of init: 1, 2, 3", "int", (1, 2, 3), alias_of="init"),
        Option("tol", None, "old name of xtol", "float", alias_of="xtol"),
        Option("max_iter", None, "old name of max_iterations", "int", alias_of="max_iterations"),
    )

    def __init__(self, model, scene=None, method="riqn", init="semi_implicit", xtol=1e-12, max_iterations=50,
                 on_fail="warn", ig=None, tol=None, max_iter=None, **options):
        super().__init__(model, scene, **options)
        ig = INITS[init] if ig is None else ig
        tol = xtol if tol is None else tol
        max_iter = max_iterations if max_iter is None else max_iter
        if method not in METHODS:
            raise InputError(f"unknown variational method {method!r}; expected one of {sorted(METHODS)}")
        if int(ig) not in (1, 2, 3):
            raise InputError(f"initial guess ig must be 1, 2 or 3 (paper 004 Sec. 3.3), got {ig!r}")
        if not (float(tol) > 0):
            raise InputError(f"tol must be positive, got {tol!r}")
        if int(max_iter) < 1:
            raise InputError(f"max_iter must be >= 1, got {max_iter!r}")
        if on_fail not in ("warn", "raise", "ignore"):
            raise InputError(f"on_fail must be 'warn', 'raise' or 'ignore', got {on_fail!r}")
        if method != "riqn" and any(e.active for e in getattr(model, "equality", ())):
            raise InputError(f"variational with method={method!r} cannot keep equality constraints (model "
                             f"{model.name!r}); use method='riqn' (the default: the constraints' rows border its "
                             "O(n) update)")
        ks = self.scene.kernel_arrays(model)
        if ks.npts > 0 or ks.nitem > 0:
            raise InputError("the variational integrator does not handle contact yet (the scene has contact points"
                             + (" or shapes of bodies that touch each other: make_scene(body_contact=False)"
                                if ks.nitem > 0 else "") + ")")
        self.method = method
        self.ig = int(ig)
        self.tol = float(tol)
        self.max_iter = int(max_iter)
        self.on_fail = on_fail
        self._m0 = model.k._replace(gravity=np.zeros(3))
        self._B = None

    def _buffers(self, B):
        if self._B != B:
            self._B = B
            self._dw = make_drnea_work(self.model, B)
            self._vw = make_vwork(self.model, B, self.method != "riqn")
        return work_for(self.model, B), self._dw, self._vw

    def _step(self, state, control, dt):
        B = state.batch
        w, dw, vw = self._buffers(B)
        kc = control.kernel_arrays(self.model, B)
        q = np.ascontiguousarray(state.q)
        v = np.ascontiguousarray(state.v)
        qn = np.empty_like(q)
        vn = np.empty_like(v)
        e = np.empty((B, 2))
        stats = np.zeros((B, 3))
        run = VI_BATCH(dense=self.method != "riqn", equality=self.model.neq_rows > 0)
        run(self.model.k, self._m0, kc, w, dw, vw, q, v, dt, METHODS[self.method], self.ig, self.tol, self.max_iter,
            qn, vn, e, stats)
        nan = ~(np.isfinite(qn).all(axis=1) & np.isfinite(vn).all(axis=1))
        conv = (stats[:, 2] > 0.5) & ~nan
        if not conv.all() and self.on_fail != "ignore":
            bad = np.flatnonzero(~conv)
            msg = (f"variational ({self.method}) step at t={state.t:.6g} did not converge for trajectories "
                   f"{bad[:10].tolist()} (residual {stats[bad[0], 1]:.3g} after {int(stats[bad[0], 0])} iterations, "
                   f"tol {self.tol:g}, max_iter {self.max_iter})")
            if self.on_fail == "raise":
                raise SimulationError(msg)
            warnings.warn(msg, RuntimeWarning, stacklevel=3)
        diag = Diagnostics(energy=e.sum(axis=1), nan=nan, iterations=stats[:, 0].astype(np.int64),
                           residual=stats[:, 1], converged=conv)
        return State(qn, vn, state.t + dt, q.copy()), diag

    def rollout(self, state, control, dt, steps, every=1):
        """``steps`` steps inside one compiled call (no Python per step), recording every
        ``every``-th state.  Returns ``(final State, q (B, F, nq), v (B, F, nv), energy (B, F)
        kinetic + potential, iterations (B, steps))`` with ``F = steps // every``.  Steps that
        did not converge are reported as in :meth:`step` (warn / raise / ignore)."""
        from pbsim.control.control import default_control

        dt = check_dt(dt)
        steps, every = int(steps), int(every)
        if steps < 1 or every < 1:
            raise InputError(f"steps and every must be >= 1, got steps={steps!r}, every={every!r}")
        B = state.batch
        w, dw, vw = self._buffers(B)
        # default_control: one Control per model, its arrays cached in it per batch size
        kc = (control if control is not None else default_control(self.model)).kernel_arrays(self.model, B)
        q = np.array(state.q, dtype=np.float64, order="C")
        v = np.array(state.v, dtype=np.float64, order="C")
        F = steps // every
        qo = np.zeros((B, F, self.model.nq))
        vo = np.zeros((B, F, self.model.nv))
        eo = np.zeros((B, F, 2))
        its = np.zeros((B, steps))
        stats = np.zeros((B, 3))
        run = VI_ROLLOUT(dense=self.method != "riqn", equality=self.model.neq_rows > 0)
        run(self.model.k, self._m0, kc, w, dw, vw, q, v, np.empty_like(q), np.empty_like(v), dt, METHODS[self.method],
            self.ig, self.tol, self.max_iter, steps, every, qo, vo, eo, its, stats)
        nan = ~(np.isfinite(q).all(axis=1) & np.isfinite(v).all(axis=1))
        bad = np.flatnonzero((stats[:, 0] > 0) | nan)
        if bad.size and self.on_fail != "ignore":
            b0 = bad[0]
            msg = (f"variational ({self.method}) rollout: {int(stats[b0, 0])} of {steps} steps did not converge "
                   f"for trajectories {bad[:10].tolist()} (first at step {int(stats[b0, 1])}, max residual "
                   f"{stats[b0, 2]:.3g}, tol {self.tol:g}, max_iter {self.max_iter})")
            if self.on_fail == "raise":
                raise SimulationError(msg)
            warnings.warn(msg, RuntimeWarning, stacklevel=2)
        final = State(q, v, state.t + steps * dt)
        return final, qo, vo, eo.sum(axis=2), its.astype(np.int64)


@register("variational_newton", doc="variational integrator, DEL by DRNEA solved by Newton (exact Jacobian, Alg. 4)",
          method="newton")
class VariationalNewton(Variational):
    """Variational integrator with Newton's method (baseline of paper 004 §4.3)."""

    supports_equality = False  # the dense solves are not bordered by the rows (method='riqn' is)


@register("variational_broyden", doc="variational integrator, DEL by DRNEA solved by Broyden's method",
          method="broyden")
class VariationalBroyden(Variational):
    """Variational integrator with Broyden's method (baseline of paper 004 §4.3)."""

    supports_equality = False  # the dense solves are not bordered by the rows (method='riqn' is)
