"""The integrator class of both PGM forms (options, checks, diagnostics, test tools) and its step's features."""

from __future__ import annotations

import math
import types
import warnings

import numpy as np

from pbsim.jit import python_tree, unused
from pbsim.contact.nmdp import tangent_frame
from pbsim.errors import InputError, SimulationError
from pbsim.dynamics.equality import PENALTY_FEATURE
from pbsim.integrators.base import Integrator, contact_equality_used
from pbsim.integrators.options import Option
from pbsim.integrators.pgm.contact import BODY_CONTACT
from pbsim.integrators.pgm.problem import (S_CAP, S_EVAL, S_GACC, S_ITCAP, S_K0, S_K1, S_KRISE, S_LU, S_NEWTON,
                                           S_OVER, S_PFAIL, S_QP, S_QPFAIL, S_QPIT, S_REJ, S_SUB, pgm_options)
from pbsim.integrators.pgm.solve import GAMMA0_FO
from pbsim.integrators.pgm.wrench import (MARGIN, MAX_CONTACTS, MAX_CONTACTS_OPTION, WRENCH_OPTIONS,
                                          check_max_contacts, overflow_warning, pair_capacity, wrench_parameters)


PROJECTION = Option(
    "projection", "newton", "zeroth-order PGM: the manifold projection's A: 'newton' the exact A of Eq. 9 (ours; "
    "the QP's D stays Eq. 10's), 'chord' Eq. 11's zeroth-order A (the paper's; linear convergence, slow against "
    "stiff contact)", "str", ("newton", "chord"))  # fmt: skip


def pgm_option_specs(maxit, gamma0=GAMMA0_FO, zo=False):
    """The options of both forms (the NMDP wrench's, then the PGM's); ``maxit`` the default of
    ``max_iterations``, ``gamma0`` that of ``gamma0``; ``zo``: the zeroth-order form's
    ``projection`` too."""
    return (*_pgm_option_specs(maxit, gamma0), *((PROJECTION,) if zo else ()))


def _pgm_option_specs(maxit, gamma0):
    return (
        *WRENCH_OPTIONS,
        Option("tol", 1e-8, "manifold projection converged when |G|_inf <= tol * (M g x 1 m)", "float"),
        Option("xtol", 1e-6, "PGM stops when an accepted iterate moves theta by less than this (the paper's "
               "epsilon, rad or m)", "float"),
        Option("eta", 1.5, "proximal factor: reject gamma /= eta, accept gamma *= eta (> 1)", "float"),
        Option("gamma0", gamma0, "the proximal parameter gamma at the first PGM iteration of a (sub-)step (> 0; the "
               "proximal weight is 2 sigma / gamma, sigma the QP's largest curvature)", "float"),
        Option("max_iterations", maxit, "outer PGM iterations per (sub-)step", "int"),
        Option("substep", 6, "Algorithm 2: a failed step is halved recursively down to alpha = 2^-substep "
               "(the cap; 0: never)", "int"),
        Option("max_step", 0.5, "a Newton step of the manifold projection moving a coordinate by more than this "
               "(rad or m), plus how far PD/SPD joint targets lie from the prediction, is a projection failure "
               "(Algorithm 2 halves the step; ours)", "float"),
        Option("depth_limit", True, "Algorithm 2 also halves a sub-step that drove a contact point deeper than "
               "Scene.max_penetration (and deeper than it began; ours: the issue-30 step limiter)", "bool"),
        Option("init", "qp", "start of the PGM: 'qp' the linearised MDP QP at theta_- (+) dt v (ours), 'zero' "
               "w = 0 (the paper's Algorithm 1)", "str", ("qp", "zero")),
        Option("on_fail", "warn", "what a step whose sub-step at the cap alpha failed or ran out of iterations, or whose "
               "body-body contact set overflowed max_contacts, does", "str", ("warn", "raise", "ignore")),
        MAX_CONTACTS_OPTION,
    )  # fmt: skip


def check_number(nm, v, lo, strict, where):
    """``float(v)``, finite and ``>= lo`` (``> lo`` when ``strict``), else an InputError naming ``where``."""
    try:
        f = float(v)
    except (TypeError, ValueError):
        raise InputError(f"{where}: {nm} must be a finite number, got {v!r}") from None
    if not math.isfinite(f) or f < lo or (strict and f == lo):
        raise InputError(f"{where}: {nm} must be a finite number {'>' if strict else '>='} {lo:g}, got {v!r}")
    return f


# Contact between bodies is compiled only into runs that have it (pbsim.jit.Variants), and so are
# equality constraints (the penalty in G, the trials' second-order correction, the end-of-step
# projection): compiled into every build, they made a free model's step slower (docs/robots.md
# "Cost"), and a model with them compiles its own build once (~110 s, then the disk cache).
PGM_FEATURES = {"body_contact": BODY_CONTACT, "equality": PENALTY_FEATURE}
PGM_USED = contact_equality_used


class PgmIntegrator(Integrator):
    """Base of the NMDP integrators (both forms): the options of :func:`pgm_option_specs` checked
    (InputError), the step through the form's ``STEP`` (a :func:`pgm_step` bound to its hooks),
    the diagnostics, ``on_fail``, and the test tools :meth:`residual` / :meth:`candidates`.  A form
    sets ``name``, ``ZO``, ``OPTIONS``, ``STEP``, ``HOOKS = (prepare, eval)`` (its bound hook
    kernels) and :meth:`make_x`."""

    implicit = True
    ZO = False
    HOOKS = ()

    def __init__(self, model, scene=None, **options):
        super().__init__(model, scene, **options)
        nm = self.name
        sc = self.scene
        self.mu, self.k, self.zeta, self.vx = wrench_parameters(nm, model, sc, options)
        self.margin = check_number("margin", options.get("margin", MARGIN), 0.0, False, nm)
        self.tol = check_number("tol", options.get("tol", 1e-8), 0.0, True, nm)
        self.xtol = check_number("xtol", options.get("xtol", 1e-6), 0.0, True, nm)
        self.eta = check_number("eta", options.get("eta", 1.5), 1.0, True, nm)
        g0 = options.get("gamma0", next(o.default for o in type(self).OPTIONS if o.name == "gamma0"))
        self.gamma0 = check_number("gamma0", g0, 0.0, True, nm)
        mi = options.get("max_iterations", next(o.default for o in type(self).OPTIONS if o.name == "max_iterations"))
        if isinstance(mi, bool) or not isinstance(mi, (int, np.integer)) or mi < 1:
            raise InputError(f"{nm}: max_iterations must be an integer >= 1, got {mi!r}")
        self.max_iterations = int(mi)
        sub = options.get("substep", 6)
        if isinstance(sub, bool) or not isinstance(sub, (int, np.integer)) or not 0 <= sub <= 20:
            raise InputError(f"{nm}: substep must be an integer in 0..20 (alpha >= 2^-substep), got {sub!r}")
        self.substep = int(sub)
        self.max_step = check_number("max_step", options.get("max_step", 0.5), 0.0, True, nm)
        self.depth_limit = bool(options.get("depth_limit", True))
        self.maxpen = float(sc.max_penetration) if self.depth_limit and np.isfinite(sc.max_penetration) else 0.0
        self.init = options.get("init", "qp")
        if self.init not in ("qp", "zero"):
            raise InputError(f"{nm}: init must be 'qp' or 'zero', got {self.init!r}")
        self.on_fail = options.get("on_fail", "warn")
        if self.on_fail not in ("warn", "raise", "ignore"):
            raise InputError(f"{nm}: on_fail must be 'warn', 'raise' or 'ignore', got {self.on_fail!r}")
        self.max_contacts = check_max_contacts(nm, options.get("max_contacts", MAX_CONTACTS))
        self.projection = options.get("projection", "newton")
        if self.projection not in ("newton", "chord"):
            raise InputError(f"{nm}: projection must be 'newton' or 'chord', got {self.projection!r}")
        # the kernel's zo: 0 first order, 1 zeroth order with Eq. 11's chord projection, 2 zeroth
        # order with the exact A in the projection (ours)
        self.zo = 0 if not self.ZO else (2 if self.projection == "newton" else 1)
        g = float(np.linalg.norm(model.gravity)) or 9.81
        self.gtol = self.tol * max(float(model.total_mass), 1e-6) * g  # |G|_inf bound [N, N m]
        self.frame = tangent_frame(model)

    def pgm_options(self) -> dict:
        """The option fields of the step's scratch (:data:`PGM_OPTIONS`)."""
        return pgm_options(self.frame, self.k, self.zeta, self.mu, self.vx, self.margin, self.max_iterations,
                           self.gtol, self.xtol, self.eta, self.substep, self.zo,
                           1 if self.init == "qp" else 0, self.max_step, self.gamma0,
                           pair_capacity(self.scene.kernel_arrays(self.model), self.max_contacts),
                           self.maxpen)  # fmt: skip

    def make_x(self, B):
        """The step's scratch for ``B`` trajectories (the form's namedtuple)."""
        raise NotImplementedError

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
        d.extra["evaluations"] = st[:, S_EVAL].astype(int)
        d.extra["lu_factorizations"] = st[:, S_LU].astype(int)
        d.extra["qp_solves"] = st[:, S_QP].astype(int)
        d.extra["qp_iterations"] = st[:, S_QPIT].astype(int)
        over = st[:, S_OVER].astype(int)
        d.extra["contact_overflow"] = over
        overflow_warning(self.name, over, self.max_contacts, self.on_fail)
        bad = ~d.converged & (over == 0)
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
    def _prepared(self, q0, v0, dt, control, frame_dt=None):
        from pbsim.control.control import default_control
        from pbsim.control.stepwork import make_step_work
        from pbsim.dynamics.workspace import work_for

        x = self.STEP.make_extra(self, 1)
        kc = (control or default_control(self.model)).kernel_arrays(self.model, 1)
        wk = work_for(self.model, 1)
        ks = self.scene.kernel_arrays(self.model)
        q0, v0 = (np.ascontiguousarray(a, float).copy() for a in (q0, v0))
        dtf = float(dt if frame_dt is None else frame_dt)
        nc = self._hooks(self.model.k, ks, kc, wk, make_step_work(self.model, 1), x, q0, v0, float(dt), dtf,
                         q0, np.zeros(0), 0, True, False, False, False)[0]
        return x, kc, wk, ks, q0, v0, nc

    def residual(self, q0, v0, theta, w, dt, control=None, deriv=True, first=None, frame_dt=None):
        """``(G, A, B, K, g, M)`` of the sub-step of ``dt`` (of the frame step ``frame_dt``, default
        ``dt``: alpha = 1) from ``(q0, v0)`` at ``(theta, w)`` for one trajectory (1-D arrays; ``w``
        (candidates * vx,) in the order of :meth:`candidates`); ``A`` first order unless ``first``
        is False (default: this method's order).  B is (nv, m) = dG/dw; ``M = dt^2 Q`` (Q the QP's
        Hessian of K)."""
        first = (not self.ZO) if first is None else bool(first)
        x, kc, wk, ks, q0, v0, nc = self._prepared(q0, v0, dt, control, frame_dt)
        th = np.ascontiguousarray(theta, float).copy()
        wv = np.zeros(x.wts.shape[1])
        w = np.asarray(w, float).ravel()
        wv[: len(w)] = w
        K = self.evaluate(ks, kc, wk, x, q0, v0, th, dt, wv, nc, deriv, first)
        m = nc * self.vx
        return (x.G[0].copy(), x.A[0].copy(), x.Bm[0, :m].T.copy(), float(K), x.g[0].copy(), x.M[0].copy())

    def evaluate(self, ks, kc, wk, x, q0, v0, theta, dt, w, nc, deriv=True, first=True):
        """The form's eval hook at ``(theta, w)`` on row 0 of the scratch of :meth:`_prepared`
        (``w`` padded to ``x.wts.shape[1]``; ``theta`` overwritten with the evaluated point):
        K, with G, A, B and the rest in ``x``."""
        from pbsim.control.stepwork import make_step_work

        return self._hooks(self.model.k, ks, kc, wk, make_step_work(self.model, 1), x, q0, v0, float(dt), float(dt),
                           theta, w, nc, False, True, bool(deriv), bool(first))[1]

    @property
    def _hooks(self):
        """:func:`pgm_hooks` bound to this form's two hooks, run as plain Python
        (:func:`pbsim.jit.python_tree`): these test tools evaluate a step's pieces a few dozen
        times, which takes seconds in the interpreter, where compiling the two hooks' trees with a
        Python entry took 73 s (nmdp) in every fresh process."""
        if "_hooks_py" not in self.__dict__:
            g = dict(pgm_hooks.__globals__)
            g.update(_prepare=python_tree(self.HOOKS[0]), _eval=python_tree(self.HOOKS[1]))
            self.__dict__["_hooks_py"] = types.FunctionType(pgm_hooks.__code__, g, "pgm_hooks")
        return self.__dict__["_hooks_py"]

    def candidates(self, q0, v0, dt, control=None):
        """The contact set of the step of ``dt`` from ``(q0, v0)``: scene point indices."""
        x, _kc, _wk, _ks, _q0, _v0, nc = self._prepared(q0, v0, dt, control)
        return x.act[0, :nc].copy()


_prepare = _eval = unused  # a form's hooks, bound by entry() (PgmIntegrator._hooks)


def pgm_hooks(m, s, c, w, sw, x, q0, v0, dt, frame_dt, th, wv, nc, prepare, evaluate, deriv, first):
    """``(nc, K)``: the form's prepare hook on row 0 (``prepare``: the step's contact set, ``nc``
    candidates), then its eval hook at ``(th, wv)`` (``evaluate``)."""
    if prepare:
        nc = _prepare(m, s, c, w, sw, x, 0, q0, v0, dt, frame_dt)
    K = 0.0
    if evaluate:
        K = _eval(m, s, c, w, x, 0, q0, v0, th, dt, wv, nc, deriv, first)
    return nc, K
