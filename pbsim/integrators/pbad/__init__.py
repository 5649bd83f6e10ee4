"""PBAD: position-based articulated dynamics (paper 000), orders 2 (Eq. 5), 3 and 4 (Eq. 6-7).

Files: :mod:`.energy` (the objective's terms through world poses and Eq. 8's second moments,
Algorithms 1-3), :mod:`.order2` (Eq. 5 and its LM / LBFGS solvers), :mod:`.colloc_residual` (Eq. 6's
residuals and their Jacobian), :mod:`.colloc` (Eq. 7: the LM solve of orders 3, 4),
:mod:`.step` (order 2 as the contract's per-trajectory step kernel, for the CPU batch and GPU
drivers); this file: the integrator classes and their option specs.
"""
from __future__ import annotations

import numbers

from dataclasses import replace

import numpy as np

from pbsim.dynamics.workspace import make_work, work_for
from pbsim.errors import InputError
from pbsim.integrators.base import Diagnostics, Integrator, Option, State, register
from pbsim.integrators.pbad.colloc import _GUESS, COLLOC, COLLOC_EVAL, colloc_rotation_batch
from pbsim.integrators.pbad.colloc_residual import (collocation_nodes, lagrange_derivatives,  # noqa: F401 (public)
                                                    linear_spectral_radius)
from pbsim.integrators.pbad.energy import make_pbad_model
from pbsim.integrators.pbad.order2 import PBAD2, make_pbad_work, pbad2_eval_batch
from pbsim.integrators.pbad.step import STEP
from pbsim.optim.substep import failed, substep

# ---------------------------------------------------------------------------------------------
# integrator classes

class _PbadBase(Integrator):
    implicit = True
    spatial_tendons = False  # fixed tendons only (pbsim.dynamics.tendon: potentials of the step)
    tendon_potentials = True
    order = 2
    OPTIONS = (
        Option("optimizer", "lm", "minimiser of the step objective (Levenberg-Marquardt or LBFGS)", "str",
               ("lm", "lbfgs")),
        Option("max_iterations", None, "solver iteration limit (None: 50 for lm, 500 for lbfgs)", "int"),
        Option("gtol", 1e-8, "converged when the gradient's max-norm is below this", "float"),
        Option("xtol", 1e-12, "converged when the step's max-norm is below this (rad/m)", "float"),
        Option("hessian", "exact", "LM Hessian: exact second derivatives or Gauss-Newton", "str", ("exact", "gn")),
        Option("substep", 0, "on a failed step, split it in halves up to this many levels (0: never)", "int"),
        Option("points", None, "drag sample points (make_pbad_model) and/or, with contact=True, contact points "
               "against a plane (plane_normal, plane_offset, D1, D2); None or no contact: the scene's contact", "dict"),
        Option("friction", "eq9", "contact friction: 'eq9', paper 000's tangential damping D2 d^2 |u|^2 (its "
               "strength falls as 1/dt), or 'coulomb', the lagged Coulomb potential (the same friction at every dt; "
               "pbsim.contact.energy, docs/robustness.md)", "str", ("eq9", "coulomb")),
        Option("friction_speed", 1e-3, "with friction='coulomb': the sliding speed (m/s) below which friction is "
               "smoothed to a viscous law (creep stays below it)", "float"),
        Option("order", None, "ignored (the order is fixed by the integrator's name); kept for old callers"),
    )

    def __init__(self, model, scene=None, **options):
        super().__init__(model, scene, **options)
        o = dict(options)
        self.optimizer = o.pop("optimizer", "lm")
        if self.optimizer not in ("lm", "lbfgs"):
            raise InputError(f"pbad optimizer must be 'lm' or 'lbfgs', got {self.optimizer!r}")
        maxit = o.pop("max_iterations", None)
        self.maxit = int((50 if self.optimizer == "lm" else 500) if maxit is None else maxit)
        self.gtol = float(o.pop("gtol", 1e-8))
        self.xtol = float(o.pop("xtol", 1e-12))
        self.hessian = o.pop("hessian", "exact")
        if self.hessian not in ("exact", "gn"):
            raise InputError(f"pbad hessian must be 'exact' or 'gn', got {self.hessian!r}")
        self.substeps_on_failure = int(o.pop("substep", 0))
        check_solver_options(self.name, self.maxit, self.gtol, self.xtol, self.substeps_on_failure)
        pts = o.pop("points", None)  # dict: drag sample points, and/or contact points against a plane
        drag, cscene, D1, D2 = points_contact(model, pts or {})
        # a points dict with contact=True replaces the scene's contact (the integrator's step only:
        # the batch drivers read their own scene's arrays, see step.pbad_extra)
        self.points_contact_override = cscene is not None
        if cscene is not None:
            self.scene = cscene
        self.ks, D1s, D2s = scene_points(model, self.scene)  # the scene arrays s PBAD's kernels read
        self.pm = make_pbad_model(model, D1=D1s if cscene is None else D1, D2=D2s if cscene is None else D2, **drag)
        self.friction = o.pop("friction", "eq9")
        if self.friction not in ("eq9", "coulomb"):
            raise InputError(f"pbad friction must be 'eq9' or 'coulomb', got {self.friction!r}")
        ev = float(o.pop("friction_speed", 1e-3))
        if not (ev > 0.0 and np.isfinite(ev)):
            raise InputError(f"pbad friction_speed must be a positive number of m/s, got {ev!r}")
        if self.friction == "coulomb":
            self.pm = self.pm._replace(friction_ev=ev)
        for k in ("order",):
            o.pop(k, None)
        if o:
            raise InputError(f"unknown pbad options: {sorted(o)}")
        self._B = None

    def _work(self, B):
        if self._B != B:
            self._B = B
            self._pw = make_pbad_work(self.model, self.pm, B, self.order)
            # LBFGS keeps the factor of M(q_k) in a second dynamics workspace (the shared one is
            # overwritten by every energy evaluation); LM never reads it
            self._wf = make_work(self.model, B) if self.optimizer == "lbfgs" else None
        return work_for(self.model, B), self._pw



def check_solver_options(name: str, maxit, gtol, xtol, substep) -> None:
    """InputError naming the option for an iteration cap below 1, a tolerance that is negative or
    not finite, or a negative number of sub-step levels (PBAD's solver options)."""
    if maxit < 1:
        raise InputError(f"{name} option 'max_iterations' must be >= 1, got {maxit!r}")
    for k, v in (("gtol", gtol), ("xtol", xtol)):
        if not (np.isfinite(v) and v >= 0.0):
            raise InputError(f"{name} option {k!r} must be a finite number >= 0, got {v!r}")
    if substep < 0:
        raise InputError(f"{name} option 'substep' must be an integer >= 0, got {substep!r}")


def scene_points(model, scene):
    """PBAD's penalty contact (paper 000 Eq. 9) from a :class:`pbsim.Scene`: the scene's contact
    points (sphere points keep their radius) against its whole environment (planes in any number,
    boxes, spheres, capsules, heightfields, mesh terrain: the contact layer's one detection).  Eq. 9's energy
    ``D1 d^2`` is the spring energy ``k d^2 / 2`` of the explicit integrators' penalty model, so
    ``D1 = k / 2`` with the scene's per-point stiffness ``k``; ``D2`` (tangential damping of
    Eq. 9) is taken as ``mu k / (2 v_ref)`` with ``v_ref = 0.1`` m/s, i.e. the friction of a
    point sliding at 0.1 m/s matches Coulomb friction at the same depth.  Returns ``(ks, D1, D2)``:
    the scene arrays (:class:`pbsim.contact.KScene`, no contact when ``ks.npts == 0``) and the
    per-point parameters (:func:`pbsim.contact.energy.energy_parameters`)."""
    from pbsim.contact.energy import energy_parameters

    ks = scene.kernel_arrays(model)
    D1, D2 = energy_parameters(ks)
    return ks, D1, D2


_DRAG_KEYS = ("points_body", "points_local", "points_axis", "drag_n", "drag_t")
_CONTACT_KEYS = ("contact", "plane_normal", "plane_offset", "D1", "D2", "points_radius")


def points_contact(model, pts: dict):
    """Split the ``points`` option: ``(drag, scene, D1, D2)`` with ``drag`` the keys of
    :func:`make_pbad_model`'s drag points, and, when ``contact`` is true, the contact as the contact
    layer sees it: a :class:`pbsim.Scene` with the plane ``plane_normal . x = plane_offset``
    (default z = 0) and the same points (radius ``points_radius``), and Eq. 9's ``D1``, ``D2`` per
    point (the given numbers); ``scene`` None without contact."""
    from pbsim.contact.environment import Plane
    from pbsim.contact.points import ContactPoints
    from pbsim.contact.scene import Scene

    bad = set(pts) - set(_DRAG_KEYS) - set(_CONTACT_KEYS)
    if bad:
        raise InputError(f"unknown pbad points keys {sorted(bad)}; valid: {', '.join(_DRAG_KEYS + _CONTACT_KEYS)}")
    drag = {k: pts[k] for k in _DRAG_KEYS if k in pts}
    body = pts.get("points_body")
    n = 0 if body is None else len(body)
    if not pts.get("contact", False) or n == 0:
        return drag, None, None, None
    local = np.asarray(pts["points_local"], np.float64).reshape(n, 3)
    rad = pts.get("points_radius")
    rad = np.zeros(n) if rad is None else np.array(np.broadcast_to(rad, (n,)), np.float64)
    plane = Plane(np.asarray(pts.get("plane_normal", (0.0, 0.0, 1.0)), np.float64), float(pts.get("plane_offset", 0.0)))
    scene = Scene(environment=[plane], points=ContactPoints(np.asarray(body, np.int32), local, rad))
    D1 = np.full(n, float(pts.get("D1", 0.0)))
    D2 = np.full(n, float(pts.get("D2", 0.0)))
    return drag, scene, D1, D2


@register("pbad", doc="PBAD order 2 (paper 000 Eq. 5): implicit position-based step, LM/LBFGS, stable at large dt")
class Pbad2(_PbadBase):
    """PBAD, second-order collocation (Eq. 5), Levenberg-Marquardt or LBFGS."""

    name = "pbad"
    STEP = STEP  # LM, the solver loop inside the step kernel (CpuBatch, GPU)
    supports_equality = True  # a stiff penalty in Eq. 5 (pbsim.dynamics.equality.equality_penalty)

    def _run(self, state, control, dt):
        B = state.batch
        w, pw = self._work(B)
        kc = control.kernel_arrays(self.model, B)
        qn = np.empty_like(state.q)
        vn = np.empty_like(state.v)
        e = np.empty((B, 2))
        info = np.zeros((B, 4))
        lm = self.optimizer == "lm"
        run = PBAD2(points=self.pm.npts > 0, contact=self.ks.npts > 0, body_contact=self.ks.nitem > 0, lm=lm, lbfgs=not lm,
                    equality=self.model.k.eq_type.shape[0] > 0)
        run(self.model.k, self.ks, self.pm, kc, w, w if self._wf is None else self._wf, pw, state.q, state.v, dt, self.maxit,
            self.gtol, self.xtol, 0 if lm else 1, self.hessian == "exact", qn, vn, e, info)
        return qn, vn, e, info

    def _step(self, state, control, dt):
        qn, vn, e, info = self._run(state, control, dt)
        conv = info[:, 2] > 0.5
        substeps = np.ones(state.batch, int)
        bad = failed(conv, 0, self.substeps_on_failure)
        if bad is not None:  # the failed steps again as 2**substep equal sub-steps
            ctl = _sub_control(control, bad)

            def sub_step(x, h, level, anchor):
                q2, v2, e2, i2 = self._run(x, ctl, h)
                return State(q2, v2, x.t), Diagnostics(energy=e2.sum(axis=1), nan=None, iterations=i2[:, 0],
                                                       residual=i2[:, 1], converged=i2[:, 2] > 0.5)

            r = substep(sub_step, State(state.q[bad], state.v[bad], state.t), dt, self.substeps_on_failure,
                        halves=False)
            qn[bad], vn[bad], e[bad, 0], e[bad, 1] = r.state.q, r.state.v, r.energy, 0.0
            info[bad, 0] += r.iterations
            info[bad, 1], info[bad, 2] = r.residual, r.converged
            substeps[bad] = r.substeps
            conv = info[:, 2] > 0.5
        nan = ~(np.isfinite(qn).all(axis=1) & np.isfinite(vn).all(axis=1))
        new = State(qn, vn, state.t + dt, q_prev=state.q.copy())
        return new, Diagnostics(energy=e.sum(axis=1), nan=nan, iterations=info[:, 0].astype(int),
                                residual=info[:, 1], converged=conv & ~nan,
                                extra={"objective": info[:, 3], "substeps": substeps})

    # tools for tests and scripts -------------------------------------------------------------
    def objective(self, q, v, qeval, dt, control=None, exact=True, hessian=True):
        """(E, gradient, Hessian) of Eq. 5 at ``qeval`` for the step from (q, v); batched arrays."""
        from pbsim.control.control import default_control

        q, v, qeval = (np.ascontiguousarray(np.atleast_2d(a), float) for a in (q, v, qeval))
        B = q.shape[0]
        w, pw = self._work(B)
        kc = (control or default_control(self.model)).kernel_arrays(self.model, B)
        E = np.zeros(B)
        g = np.zeros((B, self.model.nv))
        H = np.zeros((B, self.model.nv, self.model.nv))
        pbad2_eval_batch(self.model.k, self.ks, self.pm, kc, w, pw, q, v, qeval, float(dt), bool(hessian), bool(exact), E, g, H)
        return E, g, H


def _passive(control):
    """No actuation: torque mode with no or all-zero torques (gravity, damping and armature only)."""
    return control.mode == "torque" and (control.tau is None or not np.any(control.tau))


def _sub_control(control, mask):
    """The control rows of the trajectories in ``mask`` (batch-1 controls broadcast)."""
    from dataclasses import replace

    def pick(x):
        a = np.asarray(x) if x is not None else None
        if a is not None and a.ndim == 2 and a.shape[0] == mask.shape[0]:
            return a[mask]
        return x

    return replace(control, tau=pick(control.tau), kp=pick(control.kp), kd=pick(control.kd),
                   q_ref=pick(control.q_ref), v_ref=pick(control.v_ref))



class _PbadColloc(_PbadBase):
    """PBAD with Legendre collocation of order K (Eq. 6-7).

    Options besides the order-2 ones: ``init`` (initial guess of the nodes: "velocity", q_k (+)
    s v_k; "extrapolate", the quadratic through the previous node with slope v_k (fewer LM
    iterations at small dt, worse roots at large dt); "pbad2", on the way to the PBAD2 step;
    "auto", default: velocity, retried from pbad2), ``max_rotation`` (rad, default 0.5: a root of
    Eq. 6 in which a joint or a body turns by more than this between two consecutive nodes is
    rejected: aliased for >= pi, badly resolved by the Cartesian polynomial above ~0.5),
    ``fallback`` for a step with no acceptable
    root ("pbad2", default: take the order-2 step of Eq. 5 instead, never split: as stable and
    cheap as ``pbad`` at large dt, dissipative on the fallen-back steps; "substep": split it in
    halves, recursively, up to ``substep`` levels, default 6; giving ``substep`` alone selects
    it; the rebuilt nodes of split steps can add energy), ``energy_guard`` (None, default, or
    g >= 0: with no actuation, a root that raises the total energy by more than g (KE_k +
    KE_k+1) is rejected too; g = 0 makes a passive run never gain energy, at the price of many
    order-2 steps), ``max_iterations`` (LM, default
    200), ``xtol`` (Newton step of Eq. 6 counted as converged, default 1e-10).  Diagnostics.extra:
    ``rotation`` (largest rotation between nodes of the accepted solution), ``substeps`` (number
    of sub-steps the step was split into, 1 = none), ``rejected`` (the full step was rejected) and
    ``fallback`` (the step is the order-2 fallback).

    Drag points and the scene's contact points act at every node as forces (:mod:`.colloc`): the
    contact force is order 2's Eq. 9 force with the tangential velocity from the collocation
    polynomial, plus, with ``contact_damping`` (default), the scene's per-point normal damping
    ``c (n . v)`` of the explicit penalty model (clamped: never pulling).  Order 2 does without it
    (its step dissipates a contact's bounce: spectral radius 0.85 per step at w dt = 0.6); the
    collocation orders nearly conserve energy, so with Eq. 9 alone (``contact_damping=False``) a
    dropped box bounces on its contact springs indefinitely.
    """

    supports_equality = True  # order 2's penalty force at every node, the end node projected (.colloc)

    OPTIONS = tuple(
        replace(o, **{"optimizer": dict(choices=("lm",), doc="minimiser of the step objective (LM only here)"),
                      "max_iterations": dict(default=200, doc="LM iteration limit"),
                      "xtol": dict(default=1e-10, doc="converged when the Newton step of Eq. 6 is below this (rad)"),
                      "substep": dict(default=None, doc="levels of halving for fallback='substep' (None: 6)")
                      }.get(o.name, {}))
        for o in _PbadBase.OPTIONS) + (
        Option("init", "auto", "initial guess of the nodes", "str", ("auto", "extrapolate", "pbad2", "velocity")),
        Option("max_rotation", 0.5, "reject roots turning a joint/body by more than this between nodes (rad)",
               "float"),
        Option("fallback", None, "step with no acceptable root: 'pbad2' or 'substep' (None: substep if "
               "substep is given, else pbad2)", "str", ("pbad2", "substep"), nullable=True),
        Option("energy_guard", None, "unactuated: reject roots raising the energy by more than g (KE_k + KE_k+1) "
               "(None: off)", "float"),
        Option("contact_damping", True, "add the scene's normal contact damping c (n . v) to Eq. 9 at the nodes "
               "(False: Eq. 9 alone, elastic impacts)", "bool"),
    )

    def __init__(self, model, scene=None, **options):
        o = dict(options)
        self.init = o.pop("init", "auto")
        if self.init not in ("auto", *_GUESS):
            raise InputError(f"pbad{self.order} init must be 'auto', 'extrapolate', 'pbad2' or 'velocity', "
                             f"got {self.init!r}")
        self.max_rotation = float(o.pop("max_rotation", 0.5))
        if not self.max_rotation > 0:
            raise InputError(f"pbad{self.order} max_rotation must be > 0 (rad), got {self.max_rotation!r}")
        # default: the order-2 step (bounded cost, never splits); asking for `substep` levels
        # without a fallback means sub-stepping
        levels = o.pop("substep", None)
        self.fallback = o.pop("fallback", None)
        if self.fallback is None:
            self.fallback = "substep" if levels is not None else "pbad2"
        levels = 6 if levels is None else levels
        if not (isinstance(levels, numbers.Integral) and levels >= 0):
            raise InputError(f"{self.name} option 'substep' must be an integer >= 0, got {levels!r}")
        self.contact_damping = bool(o.pop("contact_damping", True))
        guard = o.pop("energy_guard", None)
        self.energy_guard = None if guard is None else float(guard)
        if self.energy_guard is not None and not self.energy_guard >= 0:
            raise InputError(f"pbad{self.order} energy_guard must be >= 0 or None, got {guard!r}")
        if self.fallback not in ("substep", "pbad2"):
            raise InputError(f"pbad{self.order} fallback must be 'substep' or 'pbad2', got {self.fallback!r}")
        if o.get("max_iterations") is None:
            o["max_iterations"] = 200
        # converged when the Newton step of Eq. 6 is below xtol (rad): the residual's rounding floor
        # grows with N and 1/dt^2 (~1e-7 N m at 100 links, dt = 0.0025), above any fixed gtol
        o.setdefault("xtol", 1e-10)
        super().__init__(model, scene, **o)
        self.substeps_on_failure = int(levels)
        self._p2 = Pbad2(model, scene, **o) if self.init in ("auto", "pbad2") or self.fallback == "pbad2" else None
        if self.optimizer != "lm":
            raise InputError("high-order PBAD supports optimizer='lm' only")
        if self.contact_damping and self.ks.npts:
            c = self.ks.pt_c  # the scene's damping 2 zeta sqrt(k m_i) (pbsim.contact.scene)
            if self.points_contact_override:  # a points dict's spring is its D1: the same rule with k = 2 D1
                sc = replace(self.scene, stiffness=2.0 * float(self.pm.D1[0]))
                c = sc.point_parameters(model, sc.contact_points())[1]
            self.pm = self.pm._replace(Cn=np.ascontiguousarray(c, np.float64))
        if self.contact_damping:
            self.pm = self.pm._replace(pair_cn=1.0)  # between bodies: each point's scene damping
        self.tau = collocation_nodes(self.order)
        self.C1, self.C2 = lagrange_derivatives(self.tau)

    def _prev_node(self, state, dt, anchor=None):
        """q at t_k + tau_0 dt: the node this scheme left in ``state.carry[name]`` for this dt, else
        object returned by the previous step), else rebuilt from (q, v), ABA and, when given, a
        known configuration ``anchor = (q_a, s_a)`` at time offset s_a < 0 (see :meth:`_node_at`)."""
        c = state.carry.get(self.name)
        if c is not None and c[0] == float(dt) and c[1].shape == state.q.shape:
            return c[1]
        return self._node_at(state.q, state.v, self.tau[0] * dt, anchor)

    def _node(self, state):
        """The previous-node array this scheme carries in ``state`` (written in place)."""
        return state.carry[self.name][1]

    def _node_at(self, q, v, s, anchor=None):
        """q(t_k + s) from q_k (+) (s v + s^2/2 a + s^3 c) with a = ABA(q, v, gravcomp) (no control) and the
        cubic coefficient c fitted to the anchor (q_a at offset s_a) when given, else c = 0."""
        from pbsim.dynamics.api import aba, difference, gravcomp, integrate

        out = np.full_like(q, np.nan)
        ok = np.isfinite(q).all(axis=1) & np.isfinite(v).all(axis=1)
        if anchor is not None:
            ok &= np.isfinite(anchor[0]).all(axis=1)
        if not ok.any():
            return out
        q, v = q[ok], v[ok]
        a0 = aba(self.model, q, v, gravcomp(self.model, q))
        d = s * v + 0.5 * s * s * a0
        if anchor is not None:
            qa, sa = anchor
            c = (difference(self.model, q, qa[ok]) - sa * v - 0.5 * sa * sa * a0) / sa ** 3
            d = d + s ** 3 * c
        fin = np.isfinite(d).all(axis=1)  # ABA can overflow on a runaway state
        good = np.flatnonzero(ok)[fin]
        if len(good):
            out[good] = integrate(self.model, q[fin], d[fin])
        return np.ascontiguousarray(out)

    def _run(self, state, control, dt, init, qprev):
        B = state.batch
        w, pw = self._work(B)
        kc = control.kernel_arrays(self.model, B)
        qn = np.empty_like(state.q)
        vn = np.empty_like(state.v)
        ql = np.empty_like(state.q)
        e = np.empty((B, 2))
        info = np.zeros((B, 5))
        p2 = self._p2._run(state, control, dt) if init == "pbad2" else None
        qg = p2[0] if p2 is not None else state.q
        run = COLLOC(points=self.pm.npts > 0, contact=self.ks.npts > 0, body_contact=self.ks.nitem > 0)
        run(self.model.k, self.ks, self.pm, kc, w, pw, state.q, state.v, qprev, qg, _GUESS[init], dt, self.tau,
            self.C1, self.C2, self.maxit, self.gtol, self.xtol, self.max_rotation, qn, vn, ql, e, info)
        return State(qn, vn, state.t + dt, q_prev=state.q.copy(), carry={self.name: (float(dt), ql)}), e, info, p2

    def _step(self, state, control, dt, level=0, anchor=None):
        qprev = self._prev_node(state, dt, anchor)
        new, e, info, p2 = self._run(state, control, dt, "velocity" if self.init == "auto" else self.init, qprev)
        conv = info[:, 2] > 0.5
        if self.init == "auto" and not conv.all():  # retry from a PBAD2 step (right basin at large dt)
            n2, e2, i2, p2 = self._run(state, control, dt, "pbad2", qprev)
            fix = ~conv & (i2[:, 2] > 0.5)
            i2[:, 0] += info[:, 0]
            if fix.any():
                new.q[fix], new.v[fix], self._node(new)[fix], e[fix] = n2.q[fix], n2.v[fix], self._node(n2)[fix], e2[fix]
                info[fix] = i2[fix]
                conv = info[:, 2] > 0.5
        if self.energy_guard is not None and _passive(control):
            # a passive system cannot gain energy: a root that does (pbad4 is not A-stable; pbad3
            # ahead of a whip) is rejected like a non-converged one
            from pbsim.dynamics.api import energy

            ek = energy(self.model, state.q, state.v)
            lim = self.energy_guard * (ek[:, 0] + e[:, 0]) + 1e-12 * (1.0 + np.abs(ek.sum(axis=1)))
            gained = conv & (e.sum(axis=1) - ek.sum(axis=1) > lim)
            info[gained, 2] = 0.0
            conv = conv & ~gained
        rejected = ~conv
        substeps = np.ones(state.batch, int)
        fell_back = np.zeros(state.batch, bool)
        if self.fallback == "pbad2" and not conv.all():
            # no acceptable root of Eq. 6: take the order-2 step (Eq. 5, energy-dissipating) instead
            # and rebuild this dt's previous node from it (cubic through q_{k+1}, v_{k+1}, a and q_k)
            bad = ~conv
            if p2 is None:
                p2 = self._p2._run(state, control, dt)
            q2, v2, e2, i2 = p2
            new.q[bad], new.v[bad], e[bad] = q2[bad], v2[bad], e2[bad]
            self._node(new)[bad] = self._node_at(q2[bad], v2[bad], self.tau[0] * dt, (state.q[bad], -dt))
            info[bad, 0] += i2[bad, 0]
            info[bad, 1], info[bad, 2], info[bad, 4] = i2[bad, 1], i2[bad, 2], np.nan
            fell_back = bad
            conv = info[:, 2] > 0.5
        bad = failed(conv, level, self.substeps_on_failure) if self.fallback == "substep" else None
        if bad is not None:
            # no acceptable root of Eq. 6 (not converged, or aliased: rotation between nodes above
            # max_rotation): redo the step as two half steps, recursively (each half is this _step
            # one level down); the first half rebuilds its previous node from the full step's
            ctl = _sub_control(control, bad)
            r = substep(lambda x, h, lev, anc: self._step(x, ctl, h, lev, anc),
                        State(state.q[bad], state.v[bad], state.t), dt, self.substeps_on_failure, level=level,
                        anchor=(qprev[bad], self.tau[0] * dt), maxima=("rotation",))
            # this dt's previous node for the next step: cubic through (q, v, a) at the end, fitted
            # to the mid-step state (exact for pbad3, whose node is at -dt/2)
            ql = self._node(new)
            ql[bad] = self._node_at(r.state.q, r.state.v, self.tau[0] * dt, (r.start, -r.h))
            new.q[bad], new.v[bad] = r.state.q, r.state.v
            e[bad, 0], e[bad, 1] = r.energy, 0.0
            info[bad, 0] += r.iterations
            info[bad, 1], info[bad, 2], info[bad, 4] = r.residual, r.converged, r.maxima["rotation"]
            substeps[bad] = r.substeps
            conv = info[:, 2] > 0.5
        nan = ~(np.isfinite(new.q).all(axis=1) & np.isfinite(new.v).all(axis=1))
        return new, Diagnostics(energy=e.sum(axis=1), nan=nan, iterations=info[:, 0].astype(int),
                                residual=info[:, 1], converged=conv & ~nan,
                                extra={"objective": info[:, 3], "rotation": info[:, 4], "substeps": substeps,
                                       "rejected": rejected, "fallback": fell_back})

    def node_rotation(self, nodes):
        """Largest rotation [rad] between consecutive nodes (B, K+1, nq), as the aliasing check sees it."""
        nodes = np.ascontiguousarray(nodes, float)
        w, pw = self._work(nodes.shape[0])
        rot = np.zeros(nodes.shape[0])
        colloc_rotation_batch(self.model.k, w, pw, nodes, rot)
        return rot

    def residual(self, nodes, dt, control=None):
        """(r, J) of Eq. 6 at nodes (B, K+1, nq) (tests)."""
        from pbsim.control.control import default_control

        nodes = np.ascontiguousarray(nodes, float)
        B = nodes.shape[0]
        w, pw = self._work(B)
        kc = (control or default_control(self.model)).kernel_arrays(self.model, B)
        n = (self.order - 1) * self.model.nv
        r = np.zeros((B, n))
        J = np.zeros((B, n, n))
        run = COLLOC_EVAL(points=self.pm.npts > 0, contact=self.ks.npts > 0, body_contact=self.ks.nitem > 0)
        run(self.model.k, self.ks, self.pm, kc, w, pw, nodes, self.tau, self.C1, self.C2, float(dt), r, J)
        return r, J


@register("pbad3", doc="PBAD order 3: Legendre collocation (paper 000 Eq. 6-7), LM over all nodes")
class Pbad3(_PbadColloc):
    """PBAD, third-order position-based collocation."""

    name = "pbad3"
    order = 3


@register("pbad4", doc="PBAD order 4: Legendre collocation (paper 000 Eq. 6-7), LM over all nodes")
class Pbad4(_PbadColloc):
    """PBAD, fourth-order position-based collocation."""

    name = "pbad4"
    order = 4
