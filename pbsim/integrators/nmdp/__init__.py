"""``nmdp`` and ``nmdp_zo``: NE-NMDP of paper 002 (Pan & Hauser, *Implicit Integration for
Articulated Bodies with Contact via the Nonconvex Maximal Dissipation Principle*; notes/pbfd_nmdp.md
B1, B5): backward-Euler Newton-Euler dynamics whose contact forces minimise the kinetic energy at
the end of the step over NMDP's polytope wrench (:mod:`pbsim.contact.nmdp`, evaluated at the
*new* configuration)::

    min_{theta, w} K(theta) = 1/2 thetadot^T H(theta) thetadot
    s.t. G(theta, w) = RNEA(theta, thetadot, thetaddot) - sum_x J_x^T v_x(theta) w_x - tau(theta) = 0,
         w_x >= 0, 1^T w_x <= 1

solved by the projected gradient method of Algorithm 1: first order (``nmdp``, Eq. 7-9: exact
``A = dG/dtheta``) or zeroth order (``nmdp_zo``, Eq. 10-11: the ``dv_x/dtheta`` part of A
dropped), inside Algorithm 2's adaptive sub-stepping (a step whose projection fails or whose PGM
runs out of ``max_iterations`` is redone as two halves, recursively, down to ``alpha =
2^-substep``).  The equations, the QP, the projection
and the loop are in :mod:`.step`; the whole of Algorithm 2 is one step kernel (the recursion is a
loop over dyadic ticks), so ``CpuBatch`` and ``rollout`` run the same code as
:meth:`Integrator.step`.

Deviations and choices (each documented in :mod:`.step`): the corrected alpha scaling ``h = alpha
dt`` (B5 item 1), the proximal rule reversed to match Eq. 8 (reject: ``gamma / eta``; accept:
``gamma eta``; B5 item 2), Algorithm 2 carrying ``(theta, thetadot)`` with the cap (B5 item 3),
zeta in newtons on the candidate points only (B5 item 4), the contact set fixed per step (B5 item
8), the PSD ``Q = H / h^2`` (B1), the start ``theta_- (+) h thetadot_-`` (B5 item 10) with the
weights of the linearised MDP QP there (``init="qp"``; ``"zero"``: the paper's ``w = 0``), a
projection whose Newton step exceeds ``max_step`` counted as failed (B5 item 10: no line search,
failure means subdivide), the
proximal weight scaled by the QP's curvature and the QP in force-scaled variables (scale-free
gamma), no ``|w|^2`` regularisation (Remark 4).  Effort clamping (``Control(clamp=True)``) only
pre-clips the explicit actuation; the stable-PD part is not clamped.

Diagnostics: ``iterations`` = outer PGM iterations (summed over sub-steps), ``residual`` = the
largest final ``|G|_inf`` [N, N m], ``converged`` = every sub-step stopped by ``xtol`` and the cap
was not hit; ``extra``: ``min_alpha`` (smallest ``h / dt``), ``substeps``, ``alpha_cap`` (bool:
a sub-step of the smallest alpha failed: the state is its best projection iterate, not a solution,
or its last feasible iterate when it ran out of iterations), ``iteration_cap`` (sub-steps at the
smallest alpha that ran out of ``max_iterations``: feasible, not stationary), ``projection_failures``,
``qp_failures`` (QP solves that stopped at their iteration limit), ``rejections``,
``newton_iterations``, ``accepted_max_residual`` (the largest ``|G|_inf`` of an accepted iterate),
``accepted_k_rises`` (accepted iterates whose K rose: 0), ``k_start``/``k_end`` (K after the
initial projection and at the end of the last sub-step).
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from pbsim.contact.nmdp import tangent_frame
from pbsim.errors import InputError, SimulationError
from pbsim.integrators.base import Integrator, Option, StepSpec, register
from pbsim.integrators.nmdp_wrench import MARGIN, VX, WRENCH_OPTIONS, wrench_parameters  # noqa: F401
from pbsim.integrators.nmdp.step import (BATCHED, S_CAP, S_GACC, S_ITCAP, S_K0, S_K1, S_KRISE, S_NEWTON, S_PFAIL,
                                         S_QPFAIL, S_REJ, S_SUB, make_nmdp_extra, nmdp_step)

__all__ = ["Nmdp", "NmdpZo"]


def _extra(integrator, B):
    I = integrator
    return make_nmdp_extra(
        I.model, I.scene.kernel_arrays(I.model).npts, B, I.frame, I.k, I.zeta, I.mu, I.vx, I.margin, I.max_iterations,
        I.gtol, I.xtol, I.eta, I.substep, 1 if I.ZO else 0, 1 if I.init == "qp" else 0, I.max_step,
    )  # fmt: skip


def _options(maxit):
    return (
        *WRENCH_OPTIONS,
        Option("tol", 1e-8, "manifold projection converged when |G|_inf <= tol * (M g x 1 m)", "float"),
        Option("xtol", 1e-6, "PGM stops when an accepted iterate moves theta by less than this (the paper's "
               "epsilon, rad or m)", "float"),
        Option("eta", 1.5, "proximal factor: reject gamma /= eta, accept gamma *= eta (> 1)", "float"),
        Option("max_iterations", maxit, "outer PGM iterations per (sub-)step", "int"),
        Option("substep", 6, "Algorithm 2: a failed step is halved recursively down to alpha = 2^-substep "
               "(the cap; 0: never)", "int"),
        Option("max_step", 0.5, "a Newton step of the manifold projection moving a coordinate by more than this "
               "(rad or m) is a projection failure (Algorithm 2 halves the step; ours)", "float"),
        Option("init", "qp", "start of the PGM: 'qp' the linearised MDP QP at theta_- (+) dt v (ours), 'zero' "
               "w = 0 (the paper's Algorithm 1)", "str", ("qp", "zero")),
        Option("on_fail", "warn", "what a step whose sub-step at the cap alpha failed or ran out of iterations does", "str",
               ("warn", "raise", "ignore")),
    )  # fmt: skip


def _num(nm, v, lo, strict, where):
    try:
        f = float(v)
    except (TypeError, ValueError):
        raise InputError(f"{where}: {nm} must be a finite number, got {v!r}") from None
    if not math.isfinite(f) or f < lo or (strict and f == lo):
        raise InputError(f"{where}: {nm} must be a finite number {'>' if strict else '>='} {lo:g}, got {v!r}")
    return f


@register("nmdp", doc="NE-NMDP (paper 002): backward-Euler Newton-Euler + nonconvex maximal dissipation, "
                      "first-order PGM (Algorithm 1) with adaptive sub-steps (Algorithm 2)")  # fmt: skip
class Nmdp(Integrator):
    """NE-NMDP, first-order projected gradient method (paper 002, Eq. 6-9, Algorithms 1-2)."""

    name = "nmdp"
    implicit = True
    ZO = False
    OPTIONS = _options(200)
    STEP = StepSpec(nmdp_step, extra=_extra, batched=BATCHED, info="info")

    def __init__(self, model, scene=None, **options):
        super().__init__(model, scene, **options)
        nm = self.name
        sc = self.scene
        self.mu, self.k, self.zeta, self.vx = wrench_parameters(nm, model, sc, options)
        self.margin = _num("margin", options.get("margin", MARGIN), 0.0, False, nm)
        self.tol = _num("tol", options.get("tol", 1e-8), 0.0, True, nm)
        self.xtol = _num("xtol", options.get("xtol", 1e-6), 0.0, True, nm)
        self.eta = _num("eta", options.get("eta", 1.5), 1.0, True, nm)
        mi = options.get("max_iterations", next(o.default for o in type(self).OPTIONS if o.name == "max_iterations"))
        if isinstance(mi, bool) or not isinstance(mi, (int, np.integer)) or mi < 1:
            raise InputError(f"{nm}: max_iterations must be an integer >= 1, got {mi!r}")
        self.max_iterations = int(mi)
        sub = options.get("substep", 6)
        if isinstance(sub, bool) or not isinstance(sub, (int, np.integer)) or not 0 <= sub <= 20:
            raise InputError(f"{nm}: substep must be an integer in 0..20 (alpha >= 2^-substep), got {sub!r}")
        self.substep = int(sub)
        self.max_step = _num("max_step", options.get("max_step", 0.5), 0.0, True, nm)
        self.init = options.get("init", "qp")
        if self.init not in ("qp", "zero"):
            raise InputError(f"{nm}: init must be 'qp' or 'zero', got {self.init!r}")
        self.on_fail = options.get("on_fail", "warn")
        if self.on_fail not in ("warn", "raise", "ignore"):
            raise InputError(f"{nm}: on_fail must be 'warn', 'raise' or 'ignore', got {self.on_fail!r}")
        g = float(np.linalg.norm(model.gravity)) or 9.81
        self.gtol = self.tol * max(float(model.total_mass), 1e-6) * g  # |G|_inf bound [N, N m]
        self.frame = tangent_frame(model)

    def _step(self, state, control, dt):
        if not (np.isfinite(state.q).all() and np.isfinite(state.v).all()):
            raise InputError(f"{self.name}: the state holds NaN or inf (q or v)")
        new, d = super()._step(state, control, dt)
        st = self._x.stats
        d.extra["min_alpha"] = d.extra.pop("objective")
        d.extra["substeps"] = st[:, S_SUB].astype(int)
        d.extra["alpha_cap"] = st[:, S_CAP] > 0.5
        d.extra["iteration_cap"] = st[:, S_ITCAP].astype(int)
        d.extra["projection_failures"] = st[:, S_PFAIL].astype(int)
        d.extra["qp_failures"] = st[:, S_QPFAIL].astype(int)
        d.extra["rejections"] = st[:, S_REJ].astype(int)
        d.extra["newton_iterations"] = st[:, S_NEWTON].astype(int)
        d.extra["accepted_max_residual"] = st[:, S_GACC].copy()
        d.extra["accepted_k_rises"] = st[:, S_KRISE].astype(int)
        d.extra["k_start"] = st[:, S_K0].copy()
        d.extra["k_end"] = st[:, S_K1].copy()
        bad = ~d.converged
        if bad.any() and self.on_fail != "ignore":
            i = int(np.flatnonzero(bad)[0])
            why = (f"ran out of max_iterations = {self.max_iterations} at the sub-step cap alpha = 2^-{self.substep} "
                   "(feasible, not stationary)" if d.extra["iteration_cap"][i]
                   else "hit the sub-step cap alpha = 2^-%d (the state is the best projection iterate, |G|_inf %.3g)"
                   % (self.substep, d.residual[i]))  # fmt: skip
            msg = f"{self.name}: {int(bad.sum())} of {len(bad)} trajectories did not converge (first: {i}, {why})"
            if self.on_fail == "raise":
                raise SimulationError(msg)
            warnings.warn(msg, RuntimeWarning, stacklevel=3)
        return new, d

    # tools for tests and scripts ----------------------------------------------------------------
    def residual(self, q0, v0, theta, w, dt, control=None, deriv=True, first=None):
        """``(G, A, B, K, g, M)`` of the sub-step of ``dt`` from ``(q0, v0)`` at ``(theta, w)`` for
        one trajectory (1-D arrays; ``w`` (candidates * vx,) in the order of ``x.act``, see
        :meth:`candidates`); ``A`` first order unless ``first`` is False (default: this method's
        order).  B is (nv, m) = dG/dw."""
        from pbsim.control import Control
        from pbsim.control.stepwork import make_step_work
        from pbsim.dynamics.workspace import work_for
        from pbsim.integrators.nmdp.step import nmdp_eval, nmdp_prepare

        first = (not self.ZO) if first is None else bool(first)
        x = self.STEP.make_extra(self, 1)
        kc = (control or Control()).kernel_arrays(self.model, 1)
        sw = make_step_work(self.model, 1)
        wk = work_for(self.model, 1)
        ks = self.scene.kernel_arrays(self.model)
        q0, v0, th = (np.ascontiguousarray(a, float).copy() for a in (q0, v0, theta))
        nc = nmdp_prepare(self.model.k, ks, kc, wk, sw, x, 0, q0, v0, float(dt))
        wv = np.zeros(x.wts.shape[1])
        w = np.asarray(w, float).ravel()
        wv[: len(w)] = w
        K = nmdp_eval(self.model.k, ks, wk, x, 0, q0, v0, th, float(dt), wv, nc, bool(deriv), first)
        m = nc * self.vx
        return (x.G[0].copy(), x.A[0].copy(), x.Bm[0, :m].T.copy(), float(K), x.g[0].copy(), x.M[0].copy())

    def candidates(self, q0, v0, dt, control=None):
        """The contact set of the step of ``dt`` from ``(q0, v0)``: scene point indices."""
        from pbsim.control import Control
        from pbsim.control.stepwork import make_step_work
        from pbsim.dynamics.workspace import work_for
        from pbsim.integrators.nmdp.step import nmdp_prepare

        x = self.STEP.make_extra(self, 1)
        kc = (control or Control()).kernel_arrays(self.model, 1)
        q0, v0 = (np.ascontiguousarray(a, float).copy() for a in (q0, v0))
        nc = nmdp_prepare(self.model.k, self.scene.kernel_arrays(self.model), kc, work_for(self.model, 1),
                          make_step_work(self.model, 1), x, 0, q0, v0, float(dt))  # fmt: skip
        return x.act[0, :nc].copy()


@register("nmdp_zo", doc="NE-ZONMDP (paper 002): nmdp with the zeroth-order PGM (Eq. 10-11: dv_x/dtheta dropped "
                         "from A)")  # fmt: skip
class NmdpZo(Nmdp):
    """NE-NMDP, zeroth-order projected gradient method (paper 002, Eq. 10-11)."""

    name = "nmdp_zo"
    ZO = True
    OPTIONS = _options(500)
    STEP = StepSpec(nmdp_step, extra=_extra, batched=BATCHED, info="info")
