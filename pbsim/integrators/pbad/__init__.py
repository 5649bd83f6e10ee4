"""PBAD: position-based articulated dynamics (paper 000), orders 2 (Eq. 5), 3 and 4 (Eq. 6-7).

Files: :mod:`.energy` (the objective's terms through world poses and Eq. 8's second moments,
Algorithms 1-3), :mod:`.order2` (Eq. 5 and its LM / LBFGS solvers), :mod:`.colloc` (Eq. 6-7),
:mod:`.step` (order 2 as the contract's per-trajectory step kernel, for the CPU batch and GPU
drivers); this file: the integrator classes and their option specs.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from pbsim.dynamics.workspace import make_work, work_for
from pbsim.errors import InputError
from pbsim.integrators.base import Diagnostics, Integrator, Option, State, register
from pbsim.integrators.pbad.colloc import (_GUESS, collocation_nodes, colloc_batch, colloc_eval_batch,
                                           colloc_rotation_batch, lagrange_derivatives,
                                           linear_spectral_radius)  # noqa: F401 (public)
from pbsim.integrators.pbad.energy import make_pbad_model
from pbsim.integrators.pbad.order2 import PBAD2, make_pbad_work, pbad2_eval_batch
from pbsim.integrators.pbad.step import STEP

# ---------------------------------------------------------------------------------------------
# integrator classes

class _PbadBase(Integrator):
    implicit = True
    order = 2
    OPTIONS = (
        Option("optimizer", "lm", "minimiser of the step objective (Levenberg-Marquardt or LBFGS)", "str",
               ("lm", "lbfgs")),
        Option("max_iterations", None, "solver iteration limit (None: 50 for lm, 500 for lbfgs)", "int"),
        Option("gtol", 1e-8, "converged when the gradient's max-norm is below this", "float"),
        Option("xtol", 1e-12, "converged when the step's max-norm is below this (rad/m)", "float"),
        Option("hessian", "exact", "LM Hessian: exact second derivatives or Gauss-Newton", "str", ("exact", "gn")),
        Option("substep", 0, "on a failed step, split it in halves up to this many levels (0: never)", "int"),
        Option("points", None, "drag/contact sample points for make_pbad_model (None: from the scene)", "dict"),
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
        pts = o.pop("points", None)  # dict for make_pbad_model (drag / contact sample points)
        if pts is None and self.scene is not None:
            pts = scene_points(model, self.scene)
        self.pm = make_pbad_model(model, **(pts or {}))
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



def scene_points(model, scene):
    """PBAD's penalty contact (paper 000 Eq. 9) from a :class:`pbsim.Scene`: the scene's contact
    points (sphere points keep their radius) against its ground plane.  Eq. 9's energy
    ``D1 d^2`` is the spring energy ``k d^2 / 2`` of the explicit integrators' penalty model, so
    ``D1 = k / 2`` with the scene's per-point stiffness ``k``; ``D2`` (tangential damping of
    Eq. 9) is taken as ``mu k / (2 v_ref)`` with ``v_ref = 0.1`` m/s, i.e. the friction of a
    point sliding at 0.1 m/s matches Coulomb friction at the same depth.  Only planes are
    supported (PBAD's depth has no terrain grid yet); None when the scene has no contact."""
    from pbsim.contact.environment import Plane

    pts = scene.contact_points()
    planes = [e for e in scene.all_environment() if isinstance(e, Plane)]
    if not len(pts) or not planes:
        if len(pts) and scene.all_environment():
            raise InputError("pbad supports ground planes only (no terrain/static shapes yet); "
                             "use euler/rk4 for terrain")
        return None
    if len(scene.all_environment()) > 1:
        raise InputError("pbad supports a single ground plane (no terrain/static shapes yet)")
    plane = planes[0]
    k, _ = scene.point_parameters(model, pts)
    k = float(np.mean(k)) if len(k) else 0.0
    return dict(points_body=pts.body, points_local=pts.local, points_radius=pts.radius, contact=True,
                plane_normal=np.asarray(plane.normal, float), plane_offset=float(plane.offset),
                D1=0.5 * k, D2=scene.mu * k / (2 * 0.1))


@register("pbad", doc="PBAD order 2 (paper 000 Eq. 5): implicit position-based step, LM/LBFGS, stable at large dt")
class Pbad2(_PbadBase):
    """PBAD, second-order collocation (Eq. 5), Levenberg-Marquardt or LBFGS."""

    name = "pbad"
    STEP = STEP  # LM, the solver loop inside the step kernel (CpuBatch, GPU)

    def _run(self, state, control, dt):
        B = state.batch
        w, pw = self._work(B)
        kc = control.kernel_arrays(self.model, B)
        qn = np.empty_like(state.q)
        vn = np.empty_like(state.v)
        e = np.empty((B, 2))
        info = np.zeros((B, 4))
        lm = self.optimizer == "lm"
        run = PBAD2(points=self.pm.npts > 0, lm=lm, lbfgs=not lm)
        run(self.model.k, self.pm, kc, w, w if self._wf is None else self._wf, pw, state.q, state.v, dt, self.maxit,
            self.gtol, self.xtol, 0 if lm else 1, self.hessian == "exact", qn, vn, e, info)
        return qn, vn, e, info

    def _step(self, state, control, dt):
        qn, vn, e, info = self._run(state, control, dt)
        conv = info[:, 2] > 0.5
        if self.substeps_on_failure and not conv.all():
            bad = ~conv
            sub = State(state.q[bad].copy(), state.v[bad].copy(), state.t)
            ns = 2 ** self.substeps_on_failure
            its = info[bad, 0].copy()
            ok = np.ones(bad.sum(), bool)
            for _ in range(ns):
                q2, v2, e2, i2 = self._run(sub, _sub_control(control, bad), dt / ns)
                sub = State(q2, v2, sub.t)
                its += i2[:, 0]
                ok &= i2[:, 2] > 0.5
            qn[bad], vn[bad], e[bad] = q2, v2, e2
            info[bad, 0], info[bad, 1], info[bad, 2] = its, i2[:, 1], ok
            conv = info[:, 2] > 0.5
        nan = ~(np.isfinite(qn).all(axis=1) & np.isfinite(vn).all(axis=1))
        new = State(qn, vn, state.t + dt, q_prev=state.q.copy())
        return new, Diagnostics(energy=e.sum(axis=1), nan=nan, iterations=info[:, 0].astype(int),
                                residual=info[:, 1], converged=conv & ~nan, extra={"objective": info[:, 3]})

    # tools for tests and scripts -------------------------------------------------------------
    def objective(self, q, v, qeval, dt, control=None, exact=True, hessian=True):
        """(E, gradient, Hessian) of Eq. 5 at ``qeval`` for the step from (q, v); batched arrays."""
        from pbsim.control import Control

        q, v, qeval = (np.ascontiguousarray(np.atleast_2d(a), float) for a in (q, v, qeval))
        B = q.shape[0]
        w, pw = self._work(B)
        kc = (control or Control()).kernel_arrays(self.model, B)
        E = np.zeros(B)
        g = np.zeros((B, self.model.nv))
        H = np.zeros((B, self.model.nv, self.model.nv))
        pbad2_eval_batch(self.model.k, self.pm, kc, w, pw, q, v, qeval, float(dt), bool(hessian), bool(exact), E, g, H)
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
    """

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
        if self.pm.npts:
            raise InputError("high-order PBAD does not support drag/contact points yet; use 'pbad'")
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
        """q(t_k + s) from q_k (+) (s v + s^2/2 a + s^3 c) with a = ABA(q, v, 0) (no control) and the
        cubic coefficient c fitted to the anchor (q_a at offset s_a) when given, else c = 0."""
        from pbsim.dynamics.api import aba, difference, integrate

        out = np.full_like(q, np.nan)
        ok = np.isfinite(q).all(axis=1) & np.isfinite(v).all(axis=1)
        if anchor is not None:
            ok &= np.isfinite(anchor[0]).all(axis=1)
        if not ok.any():
            return out
        q, v = q[ok], v[ok]
        a0 = aba(self.model, q, v, np.zeros_like(v))
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
        colloc_batch(self.model.k, self.pm, kc, w, pw, state.q, state.v, qprev, qg, _GUESS[init], dt, self.tau,
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
        if level < self.substeps_on_failure and not conv.all() and self.fallback == "substep":
            # no acceptable root of Eq. 6 (not converged, or aliased: rotation between nodes above
            # max_rotation): redo the step as two half steps, recursively
            bad = ~conv
            sub = State(state.q[bad].copy(), state.v[bad].copy(), state.t)
            ctl = _sub_control(control, bad)
            its = info[bad, 0].copy()
            ok = np.ones(bad.sum(), bool)
            rot = np.zeros(bad.sum())
            ns = np.zeros(bad.sum(), int)
            anc = (qprev[bad], self.tau[0] * dt)  # the previous node of the full step, for the first half
            for _ in range(2):
                mid = sub.q
                sub, d = self._step(sub, ctl, dt / 2, level + 1, anc)
                anc = (mid, -dt / 2)
                its += d.iterations
                ok &= d.converged
                rot = np.maximum(rot, d.extra["rotation"])
                ns += d.extra["substeps"]
            # this dt's previous node for the next step: cubic through (q, v, a) at the end, fitted
            # to the mid-step state (exact for pbad3, whose node is at -dt/2)
            ql = self._node(new)
            ql[bad] = self._node_at(sub.q, sub.v, self.tau[0] * dt, (mid, -dt / 2))
            new.q[bad], new.v[bad] = sub.q, sub.v
            e[bad, 0], e[bad, 1] = d.energy, 0.0
            info[bad, 0], info[bad, 1], info[bad, 2], info[bad, 4] = its, d.residual, ok, rot
            substeps[bad] = ns
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
        from pbsim.control import Control

        nodes = np.ascontiguousarray(nodes, float)
        B = nodes.shape[0]
        w, pw = self._work(B)
        kc = (control or Control()).kernel_arrays(self.model, B)
        n = (self.order - 1) * self.model.nv
        r = np.zeros((B, n))
        J = np.zeros((B, n, n))
        colloc_eval_batch(self.model.k, self.pm, kc, w, pw, nodes, self.tau, self.C1, self.C2, float(dt), r, J)
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
