"""PBFD: position-based frictional dynamics (paper 003, Pan & Manocha), the integrator ``pbfd``.

The step solves ``r(q_{k+1}) = 0`` with (Eq. 13)

    r = grad E - C_par sum_k J_k^T f_par,k,      GE = |r|^2 / 2

``E``: PBAD's order-2 objective (inertia, gravity, control / SPD / damping / armature / springs /
dry friction / limits) + ``C_perp P_perp``; ``f_par``: the non-integrable friction force.  Files:
:mod:`.residual` (r and J_r on PBAD's kernels), :mod:`.solve` (JTJ-LM through the generic LM loop
with a QR-form damped solve; LBFGS), :mod:`.step` (the contract's step kernel), the contact model
in :mod:`pbsim.contact.pbfd`; this file: the class, its options, :func:`friction_for_mu`.

PBFD's friction is a velocity-squared drag scaled by dt^2 (with the default exponents), not
Coulomb friction: see :func:`friction_for_mu`.
"""
from __future__ import annotations

import math

import numpy as np

from pbsim.contact.pbfd import V_REF, friction_constant, normal_scale
from pbsim.contact.scene import DELTA_REF
from pbsim.errors import InputError
from pbsim.integrators.base import Diagnostics, Integrator, Option, State, register
from pbsim.integrators.pbfd.residual import make_pbfd_model, pbfd_eval_batch
from pbsim.integrators.pbfd.step import STEP, STEP_LBFGS
from pbsim.optim.substep import failed, substep

__all__ = ["Pbfd", "friction_for_mu"]


def friction_for_mu(mu: float, dt: float, model=None, *, c_normal: float | None = None, v_ref: float = V_REF,
                    alpha: float = 2.0, beta: float = 1.0, gamma: float = 1.0, delta_ref: float = DELTA_REF) -> float:
    """A starting ``c_friction`` (C_par) for pbfd that brakes like Coulomb friction ``mu`` at the
    sliding speed ``v_ref`` (default 0.1 m/s) with time step ``dt``.

    Honest rule: PBFD friction is *not* Coulomb friction.  Per contact point the friction over
    the normal force is ``mu_eff = (beta+1) (C_par / C_perp) (dt |v_t|)^(beta+1) d^(gamma+1-alpha)``;
    with the defaults (alpha = 2, beta = gamma = 1) ``mu_eff = 2 (C_par / C_perp) dt^2 |v_t|^2``
    (the note's formula): a drag growing with the square of the sliding speed, whose strength at a
    fixed C_par scales with dt^2, and no static friction (a box on a slope creeps).  This returns

        C_par = mu C_perp / ((beta+1) (dt v_ref)^(beta+1) delta_ref^(gamma+1-alpha))

    so that ``mu_eff = mu`` at ``|v_t| = v_ref`` (``mu (|v_t| / v_ref)^(beta+1)`` at other speeds)
    for this ``dt``; keep the physics at another dt by calling it again (C_par ~ dt^-(beta+1)).
    ``C_perp``: ``c_normal``, else pbfd's default for ``model`` (``M g / (4 delta_ref^alpha)``:
    :func:`pbsim.contact.pbfd.normal_scale`).  pbfd's ``c_friction=None`` applies this rule at
    every step with the scene's ``mu``."""
    if c_normal is None:
        if model is None:
            raise InputError("friction_for_mu needs the model (for pbfd's default c_normal) or c_normal")
        c_normal = normal_scale(model, delta_ref, alpha)
    return friction_constant(mu, dt, c_normal, v_ref, alpha, beta, gamma, delta_ref)


def _number(name, value, lo, strict, allow_none=False, method="pbfd"):
    """A finite float >= lo (> lo when ``strict``), else InputError naming the option."""
    if value is None and allow_none:
        return None
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise InputError(f"{method} option {name!r} must be a number, got {value!r}") from None
    if not math.isfinite(x) or x < lo or (strict and x == lo):
        raise InputError(f"{method} option {name!r} must be a finite number {'>' if strict else '>='} {lo:g}, "
                         f"got {value!r}")
    return x


@register("pbfd", doc="PBFD (paper 003): position-based frictional dynamics, JTJ-LM/LBFGS on |grad E - C_par J^T f_par|^2")
class Pbfd(Integrator):
    """Position-based frictional dynamics (paper 003): the unknown is q_{k+1}, the step is a root of
    Eq. 13's residual found by JTJ-LM (default) or LBFGS on GE = |r|^2 / 2.

    A step whose solver stalls with ``r != 0`` (paper 003's Lemma 4.2 does not hold there:
    docs/benchmarks/pbfd.md, "Stalled steps") is redone as two half steps, recursively, up to
    ``substep`` levels, inside the step kernel (:func:`pbsim.optim.substep.substep_step`), so
    ``Integrator.step``, rollout, CpuBatch, CudaBatch and the vector env give the same step;
    ``Diagnostics.extra``: ``stalled`` (the full step stalled), ``substeps`` (the number of
    sub-steps it became, 1 = none), ``objective`` (GE); ``solver_info()`` column 4 and
    ``fallback_steps()`` of the batch drivers, ``Trajectory.info["fallback_steps"]``."""

    name = "pbfd"
    implicit = True
    spatial_tendons = False  # fixed tendons only (pbsim.dynamics.tendon: potentials of the step)
    tendon_potentials = True
    # PBAD's penalty in E (so in r = grad E) and its end-of-step projection; JTJ-LM's trials get the
    # second-order correction and its damping the penalty-free scale (pbsim.integrators.pbfd.solve)
    supports_equality = True
    OPTIONS = (
        Option("optimizer", "lm", "minimiser of GE = |r|^2/2: JTJ Levenberg-Marquardt (QR-solved) or LBFGS", "str",
               ("lm", "lbfgs")),
        Option("max_iterations", None, "solver iteration limit (None: 50 for lm, 500 for lbfgs)", "int"),
        Option("rtol", 1e-9, "converged when |r|_inf <= rtol * (M g x 1 m), the robot's weight as an energy scale",
               "float"),
        Option("xtol", 1e-12, "a solver step below this (rad or m) stops the solve", "float"),
        Option("substep", 5, "a step that stalls with r != 0 is redone as two halves, recursively, up to this many "
               "levels (0: never)", "int"),
        Option("c_normal", None, "C_perp, normal force C_perp d^alpha per point (None: M g / (4 delta_ref^alpha), "
               "4 points carry the weight at the scene's delta_ref)", "float"),
        Option("c_friction", None, "C_par, friction C_par (beta+1) |u|^beta d^(gamma+1) per point (None: "
               "friction_for_mu(scene mu, dt): Coulomb mu matched at 0.1 m/s, rescaled with dt)", "float"),
        Option("alpha", 2.0, "normal force exponent, f_perp = C_perp d^alpha n (> 1)", "float"),
        Option("beta", 1.0, "friction exponent on the tangential displacement |u| (> 0)", "float"),
        Option("gamma", 1.0, "friction exponent on the depth, d^(gamma+1) (> 0)", "float"),
    )
    STEP = STEP
    # for a subclass with friction as an energy (pbd_friction): the step kernel of each optimizer
    # (the class's STEP: the batch drivers'), and the contact model's form (PbfdModel.energy)
    STEPS = {"lm": STEP, "lbfgs": STEP_LBFGS}
    ENERGY = False

    def __init__(self, model, scene=None, **options):
        super().__init__(model, scene, **options)
        o = dict(options)
        nm = self.name
        self.optimizer = o.pop("optimizer", "lm")
        if self.optimizer not in self.STEPS:
            raise InputError(f"{nm} optimizer must be one of {', '.join(map(repr, self.STEPS))}, "
                             f"got {self.optimizer!r}")
        if self.optimizer == "lbfgs" and not self.ENERGY and any(e.active for e in getattr(model, "equality", ())):
            raise InputError(f"{nm} with optimizer='lbfgs' cannot keep equality constraints (model {model.name!r}: "
                             "its line search crawls along the penalty's curved valley); use optimizer='lm'")
        maxit = o.pop("max_iterations", None)
        self.maxit = int((500 if self.optimizer == "lbfgs" else 50) if maxit is None else maxit)
        if self.maxit < 1:
            raise InputError(f"{nm} option 'max_iterations' must be >= 1, got {maxit!r}")
        self.rtol = _number("rtol", o.pop("rtol", 1e-9), 0.0, True, method=nm)
        self.xtol = _number("xtol", o.pop("xtol", 1e-12), 0.0, False, method=nm)
        self.substeps_on_failure = int(_number("substep", o.pop("substep", 5), 0.0, False, method=nm))
        self.alpha = _number("alpha", o.pop("alpha", 2.0), 1.0, True, method=nm)
        self.beta = _number("beta", o.pop("beta", 1.0), 0.0, True, method=nm)
        self.gamma = _number("gamma", o.pop("gamma", 1.0), 0.0, True, method=nm)
        cn = _number("c_normal", o.pop("c_normal", None), 0.0, False, allow_none=True, method=nm)
        cf = _number("c_friction", o.pop("c_friction", None), 0.0, False, allow_none=True, method=nm)
        if o:
            raise InputError(f"unknown {nm} options: {sorted(o)}")
        sc = self.scene
        self.c_normal = normal_scale(model, sc.delta_ref, self.alpha) if cn is None else cn
        self.c_friction = cf  # None: friction_for_mu(scene.mu, dt) at every step
        # C_par(dt) = cf_dt / dt^(beta+1) when c_friction is None (energy form: dt^beta)
        cf_dt = friction_constant(sc.mu, 1.0, self.c_normal, V_REF, self.alpha, self.beta, self.gamma, sc.delta_ref,
                                  energy=self.ENERGY)
        self.ks = sc.kernel_arrays(model)
        self.pm = make_pbfd_model(model, self.ks.npts, self.c_normal, -1.0 if cf is None else cf, cf_dt, self.alpha,
                                  self.beta, self.gamma, energy=self.ENERGY)
        g = float(np.linalg.norm(model.gravity)) or 9.81
        self.energy_scale = max(float(model.total_mass), 1e-6) * g * 1.0  # M g x 1 m [J]
        self.gtol = self.rtol * self.energy_scale
        self._scratch_b: dict = {}
        if self.STEPS[self.optimizer] is not type(self).STEP:  # its own step kernel (the batch drivers: the class's)
            self.STEP = self.STEPS[self.optimizer]

    def friction_at(self, dt: float) -> float:
        """The C_par a step of ``dt`` uses."""
        if self.c_friction is not None:
            return self.c_friction
        return self.pm.cf_dt / float(dt) ** (self.beta + 1.0 - self.pm.energy)

    # the step: the kernel through the generic driver, then the sub-step fallback ------------------
    def _scratch(self, B):
        from pbsim.control.stepwork import make_step_work

        if B not in self._scratch_b:
            if len(self._scratch_b) > 4:
                self._scratch_b.clear()
            self._scratch_b[B] = (make_step_work(self.model, B), self.STEP.make_extra(self, B))
        return self._scratch_b[B]

    def _run(self, state, control, dt):
        from pbsim.dynamics.workspace import work_for
        from pbsim.integrators.driver import driver, step_batch

        B = state.batch
        kc = control.kernel_arrays(self.model, B)
        sw, x = self._scratch(B)
        q, v = np.ascontiguousarray(state.q, float), np.ascontiguousarray(state.v, float)
        qn, vn = np.empty_like(q), np.empty_like(v)
        e = np.empty((B, 2))
        run = driver(step_batch, self.STEP.step)
        run(self.model.k, self.ks, kc, work_for(self.model, B), sw, x, q, v, float(dt), qn, vn, e)
        return qn, vn, e, x.info.copy()

    def _step(self, state, control, dt, level=0):
        if self.STEP.fallback is not None:  # the step kernel sub-steps a stalled step itself
            return Integrator._step(self, state, control, dt)
        # a step kernel without the fallback (none at present): the host's sub-steps
        from pbsim.integrators.pbad import _sub_control

        qn, vn, e, info = self._run(state, control, dt)
        B = state.batch
        conv = info[:, 2] > 0.5
        stalled = ~conv
        substeps = np.ones(B, int)
        bad = failed(conv, level, self.substeps_on_failure)
        if bad is not None:  # stalled with r != 0: two half steps, each may split again
            ctl = _sub_control(control, bad)
            r = substep(lambda x, h, lev, anchor: self._step(x, ctl, h, lev),
                        State(state.q[bad], state.v[bad], state.t), dt, self.substeps_on_failure, level=level,
                        halves=True)
            qn[bad], vn[bad] = r.state.q, r.state.v
            e[bad, 0], e[bad, 1] = r.energy, 0.0
            info[bad, 0] += r.iterations
            info[bad, 1], info[bad, 2] = r.residual, r.converged
            substeps[bad] = r.substeps
            conv = info[:, 2] > 0.5
        nan = ~(np.isfinite(qn).all(axis=1) & np.isfinite(vn).all(axis=1))
        new = State(qn, vn, state.t + dt, q_prev=state.q.copy())
        return new, Diagnostics(energy=e.sum(axis=1), nan=nan, iterations=info[:, 0].astype(int), residual=info[:, 1],
                                converged=conv & ~nan,
                                extra={"objective": info[:, 3], "stalled": stalled, "substeps": substeps})

    # tools for tests and scripts ----------------------------------------------------------------
    def residual(self, q, v, qeval, dt, control=None, jacobian=True):
        """``(E, r, J_r)`` of Eq. 13 at ``qeval`` for the step of ``dt`` from (q, v); batched arrays
        (``J_r`` zero without ``jacobian``)."""
        from pbsim.control.control import default_control
        from pbsim.dynamics.workspace import work_for

        q, v, qeval = (np.ascontiguousarray(np.atleast_2d(a), float) for a in (q, v, qeval))
        B, n = q.shape[0], self.model.nv
        _, x = self._scratch(B)
        kc = (control or default_control(self.model)).kernel_arrays(self.model, B)
        E, r, J = np.zeros(B), np.zeros((B, n)), np.zeros((B, n, n))
        pbfd_eval_batch(self.model.k, self.ks, self.pm, kc, work_for(self.model, B), x.pw, q, v, qeval, float(dt),
                        bool(jacobian), E, r, J)
        return E, r, J
