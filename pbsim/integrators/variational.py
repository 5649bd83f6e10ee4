"""Linear-time variational integrator (paper 004): DEL equation by DRNEA, root by RIQN.

Each step finds ``q_k+1`` with ``f(q_k+1) = 0`` (Eq. 3/17, evaluated by DRNEA, Alg. 2) by

- ``riqn`` (default, Alg. 3 / Eq. 25): ``q_l+1 = q_l (+) (-dt M(q_k)^-1 e_l)``, the product
  ``M^-1 e`` by one O(n) articulated-body solve (ABA with zero velocity and gravity; the factor
  ``M(q_k) + dt diag(damping + dt kp + kd)`` is formed once per step, MABA-style);
- ``newton``: exact Jacobian (Alg. 4, O(n^2) columns) and a dense LU solve (O(n^3));
- ``broyden``: exact Jacobian at the first iteration of the step, then Broyden's rank-one
  updates of its inverse (O(n^2) per iteration).

Initial guesses (§3.3): ``ig=1`` q_k; ``ig=2`` explicit Euler ``q_k (+) dt v_k``;
``ig=3`` semi-implicit Euler with ABA.  Convergence: the update's max-norm (rad / m) <= ``tol``,
at most ``max_iter`` updates; ``Diagnostics.iterations/residual/converged`` report it, and the
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

Joint impulses (Lagrange-d'Alembert): over one step ``Q = dt tau - damping d_k`` (damping implicit in
``d_k = q_k+1 (-) q_k``), PD at (q_k, v_k), SPD ``-kp (e_k + d_k) - kd (d_k/dt - v_ref)`` at the next
state; split half/half, ``F^-_k = F^+_k = Q / 2``, so the returned velocity has no O(dt) bias
(e.g. zero at an SPD/gravity equilibrium, exact under a constant torque).  Armature uses the discrete
Lagrangian ``dt/2 a (d_k/dt)^2`` (exact for 1-DOF joints; for ball/free joints the Newton Jacobian
treats ``d d_k / d q_k+1`` as identity).
"""
from __future__ import annotations

import warnings
from collections import namedtuple

import numpy as np
from numba import prange

from pbsim.backends.kernel import Variants, kernel
from pbsim.control.control import SPD
from pbsim.control.pd import control_torques
from pbsim.dynamics.aba import aba_state
from pbsim.dynamics.drnea import drnea_eval, drnea_jacobian, drnea_momentum, drnea_setup_poses, make_drnea_work
from pbsim.dynamics.energy import energy_state
from pbsim.dynamics.joints import difference_config, integrate_config
from pbsim.dynamics.minv import minv_factor, minv_solve
from pbsim.dynamics.rnea import rnea_state
from pbsim.dynamics.workspace import work_for
from pbsim.errors import InputError, SimulationError, check_dt
from pbsim.integrators.base import Diagnostics, Integrator, Option, State, register
from pbsim.optim.linalg import lu_solve_inplace

RIQN, NEWTON, BROYDEN = 0, 1, 2
METHODS = {"riqn": RIQN, "newton": NEWTON, "broyden": BROYDEN}

VWork = namedtuple("VWork", "qi d dprev f fold x lin Qc zero tau arm dq p vt Jac H hy qs hq st")


def make_vwork(model, batch: int, dense: bool) -> VWork:
    B, nq, nv = max(batch, 1), model.nq, model.nv
    z = np.zeros
    nd = nv if dense else 1
    return VWork(z((B, nq)), z((B, nv)), z((B, nv)), z((B, nv)), z((B, nv)), z((B, nv)), z((B, nv)),
                 z((B, nv)), z((B, nv)), z((B, nv)), z((B, nv)), z((B, nv)), z((B, nv)), z((B, nv)),
                 z((B, nd, nd)), z((B, nd, nd)), z((B, 2, nd)), z((B, nq)), z((B, nv)), z((B, 3)))


@kernel
def gj_inverse(A, Ainv, n):
    """``Ainv = A^-1`` by Gauss-Jordan with partial pivoting (A is destroyed)."""
    for r in range(n):
        for c in range(n):
            Ainv[r, c] = 1.0 if r == c else 0.0
    for k in range(n):
        piv = k
        best = abs(A[k, k])
        for r in range(k + 1, n):
            if abs(A[r, k]) > best:
                best = abs(A[r, k])
                piv = r
        if piv != k:
            for c in range(n):
                t = A[k, c]
                A[k, c] = A[piv, c]
                A[piv, c] = t
                t = Ainv[k, c]
                Ainv[k, c] = Ainv[piv, c]
                Ainv[piv, c] = t
        d = A[k, k]
        for c in range(n):
            A[k, c] /= d
            Ainv[k, c] /= d
        for r in range(n):
            if r != k:
                fct = A[r, k]
                if fct != 0.0:
                    for c in range(n):
                        A[r, c] -= fct * A[k, c]
                        Ainv[r, c] -= fct * Ainv[k, c]


@kernel
def vi_residual(m, dw, vw, b, q, qi, dt, f):
    """Full residual f(qi): DRNEA body part + armature + damping/SPD (linear in d_k) - constant impulses."""
    drnea_eval(m, dw, b, qi, dt, f)
    d = vw.d[b]
    difference_config(m, q, qi, d, dw.Rj[b])
    r = 0.0
    for j in range(m.nv):
        f[j] += (m.armature[j] / dt + vw.lin[b, j]) * d[j] - vw.Qc[b, j]
        if abs(f[j]) > r:
            r = abs(f[j])
    return r


@kernel
def vi_state(m, m0, c, w, dw, vw, b, q, v, dt, method, ig, tol, maxit, qn, vn, stats, reuse):
    """One step from (q_k, v_k) -> (q_k+1, v_k+1) in position-momentum form (see module doc).

    ``reuse``: the previous call on this b ended at this (q, v) (multi-step rollout): its momentum
    ``vw.p`` is p_k and its zero-armature factor of M(q_k) in ``w`` is still valid."""
    nv = m.nv
    lin = vw.lin[b]
    Qc = vw.Qc[b]
    hq = vw.hq[b]
    zero = vw.zero[b]
    tau = vw.tau[b]
    arm = vw.arm[b]
    qi = vw.qi[b]
    for j in range(nv):
        zero[j] = 0.0
    # non-conservative joint impulse over the step, Q(d_k) = dt tau - lin d_k (constant part + part
    # linear in d_k), split half/half: F^-_k = F^+_k = Q(d_k) / 2 (Marsden-West discrete forcing)
    control_torques(m, c, b, q, v, dt, vw.dq[b], vw.qs[b], w.Rj[b], tau, arm)
    spd = c.mode == SPD
    bp = b if c.kp.shape[0] > 1 else 0
    bd = b if c.kd.shape[0] > 1 else 0
    for j in range(nv):
        lin[j] = m.damping[j]
        if spd:
            kp = c.kp[bp, j]
            kd = c.kd[bd, j]
            hq[j] = 0.5 * dt * (tau[j] + (kp * dt + kd) * v[j])
            lin[j] += dt * kp + kd
        else:
            hq[j] = 0.5 * dt * tau[j]
        lin[j] *= 0.5
    implicit = False
    for j in range(nv):
        if lin[j] != 0.0:
            implicit = True
    # p_k = M(q_k) v_k = D2 Ld(q_k-1, q_k) + F^+_k-1 (forced discrete Legendre transform)
    if not reuse:
        rnea_state(m0, w, b, q, zero, v, vw.p[b])
    have_factor = reuse  # w holds the articulated factor of M(q_k) (no extra diagonal)
    for j in range(nv):
        Qc[j] = vw.p[b, j] + hq[j]
        vw.dprev[b, j] = dt * v[j]
    # initial guess (Sec. 3.3)
    if ig == 3:  # tau still holds the control torques
        for j in range(nv):
            tau[j] -= m.damping[j] * v[j]
        if have_factor:  # a_k = M^-1 (tau - C v - g): RNEA bias + O(n) solve with the stored factor
            rnea_state(m, w, b, q, v, zero, vw.vt[b])
            for j in range(nv):
                tau[j] -= vw.vt[b, j]
            minv_solve(m, w, b, tau, vw.x[b])
        else:
            aba_state(m, w, b, q, v, tau, zero, vw.x[b])
            have_factor = True  # ABA's U, D^-1 at q_k with zero extra diagonal = minv_factor(q_k, 0)
        for j in range(nv):
            vw.vt[b, j] = dt * (v[j] + dt * vw.x[b, j])
        integrate_config(m, q, vw.vt[b], qi, w.Rj[b])
    elif ig == 2:
        integrate_config(m, q, vw.dprev[b], qi, w.Rj[b])
    else:
        for j in range(m.nq):
            qi[j] = q[j]
    # per-step constants
    if method == RIQN and (implicit or not have_factor):
        for j in range(nv):
            arm[j] = dt * lin[j]
        minv_factor(m, w, b, q, zero, arm)
    drnea_setup_poses(m, dw, b, w.R[b], w.p[b], dt, 0.5)  # every path above left the poses at q_k in w
    f = vw.f[b]
    x = vw.x[b]
    it = 0
    conv = False
    res = 0.0
    while True:
        res = vi_residual(m, dw, vw, b, q, qi, dt, f)
        if it >= maxit:
            break
        if method == RIQN:
            minv_solve(m, w, b, f, x)  # Eq. 25
            for j in range(nv):
                x[j] *= dt
        elif method == NEWTON or it == 0:
            Jac = vw.Jac[b]
            drnea_jacobian(m, dw, b, dt, Jac)
            for j in range(nv):
                Jac[j, j] += m.armature[j] / dt + lin[j]
            if method == NEWTON:
                for j in range(nv):
                    x[j] = f[j]
                lu_solve_inplace(Jac, x, nv)
            else:
                gj_inverse(Jac, vw.H[b], nv)
        else:  # Broyden ("good") update of H ~ J^-1: s = -x_old, y = f - f_old
            H = vw.H[b]
            hy = vw.hy[b, 0]
            sh = vw.hy[b, 1]
            den = 0.0
            for r in range(nv):
                s = 0.0
                for cc in range(nv):
                    s += H[r, cc] * (f[cc] - vw.fold[b, cc])
                hy[r] = s
                den -= x[r] * s
            for cc in range(nv):
                s = 0.0
                for r in range(nv):
                    s -= x[r] * H[r, cc]
                sh[cc] = s
            if den != 0.0:
                for r in range(nv):
                    a = (-x[r] - hy[r]) / den
                    for cc in range(nv):
                        H[r, cc] += a * sh[cc]
        if method == BROYDEN:
            H = vw.H[b]
            for r in range(nv):
                s = 0.0
                for cc in range(nv):
                    s += H[r, cc] * f[cc]
                vw.vt[b, r] = s
            for r in range(nv):
                x[r] = vw.vt[b, r]
                vw.fold[b, r] = f[r]
        step = 0.0
        for j in range(nv):
            if abs(x[j]) > step:
                step = abs(x[j])
            vw.vt[b, j] = -x[j]
        integrate_config(m, qi, vw.vt[b], qi, w.Rj[b])
        it += 1
        if step <= tol:
            conv = True
            break
        if not (step < 1e6):  # diverged / NaN
            break
    for j in range(m.nq):
        qn[j] = qi[j]
    # forced discrete Legendre transform: v_k+1 = M(q_k+1)^-1 (D2 Ld(q_k, q_k+1) + F^+_k), from the
    # last residual evaluation at q_l (DRNEA's mu2, d = q_l (-) q_k) and, when the loop took the
    # update q_l+1 = q_l (+) (-x) (|x| <= tol), its first-order change: d p / d q_k+1 ~ (M + A)/dt - lin
    # and ((M + A)/dt + lin) x ~ f_l give p(q_l+1) = p(q_l) - f_l + 2 lin x (error O(M tol))
    drnea_momentum(m, dw, b, dt, vw.p[b])
    for j in range(nv):  # + F^+_k
        vw.p[b, j] += m.armature[j] / dt * vw.d[b, j] + hq[j] - lin[j] * vw.d[b, j]
    if conv:  # (a loop stopped by max_iter ended on a residual evaluation at qi itself)
        for j in range(nv):
            vw.p[b, j] += -f[j] + 2.0 * lin[j] * x[j]
    minv_factor(m, w, b, qi, zero, zero)
    minv_solve(m, w, b, vw.p[b], vn)
    stats[0] = it
    stats[1] = res
    stats[2] = 1.0 if conv else 0.0


@kernel(parallel=True)
def vi_batch(m, m0, c, w, dw, vw, q, v, dt, method, ig, tol, maxit, qn, vn, e, stats):
    for i in prange(q.shape[0]):
        b = np.int64(i)
        vi_state(m, m0, c, w, dw, vw, b, q[b], v[b], dt, method, ig, tol, maxit, qn[b], vn[b], stats[b], False)
        energy_state(m, w, b, qn[b], vn[b], e[b])


@kernel(parallel=True)
def vi_rollout(m, m0, c, w, dw, vw, q, v, qn, vn, dt, method, ig, tol, maxit, nsteps, every,
               qo, vo, eo, its, stats):
    """``nsteps`` steps per state inside one call; every ``every``-th state goes to qo/vo/eo[b, f].
    ``q``/``v`` (B, nq/nv) hold the initial state and receive the final one; ``qn``/``vn`` scratch.
    ``its[b, k]`` iterations of step k; ``stats[b]`` = (steps not converged, first one, max residual)."""
    for i in prange(q.shape[0]):
        b = np.int64(i)
        stats[b, 0] = 0.0
        stats[b, 1] = -1.0
        stats[b, 2] = 0.0
        for k in range(nsteps):
            vi_state(m, m0, c, w, dw, vw, b, q[b], v[b], dt, method, ig, tol, maxit, qn[b], vn[b], vw.st[b], k > 0)
            its[b, k] = vw.st[b, 0]
            if vw.st[b, 1] > stats[b, 2] or not (vw.st[b, 1] == vw.st[b, 1]):
                stats[b, 2] = vw.st[b, 1]
            if vw.st[b, 2] < 0.5:
                if stats[b, 1] < 0.0:
                    stats[b, 1] = k
                stats[b, 0] += 1.0
            for j in range(m.nq):
                q[b, j] = qn[b, j]
            for j in range(m.nv):
                v[b, j] = vn[b, j]
            if (k + 1) % every == 0:
                fr = (k + 1) // every - 1
                for j in range(m.nq):
                    qo[b, fr, j] = q[b, j]
                for j in range(m.nv):
                    vo[b, fr, j] = v[b, j]
                energy_state(m, w, b, q[b], v[b], eo[b, fr])



# Newton's and Broyden's dense Jacobian and solves are compiled only into runs that use them
# (pbsim.backends.kernel.Variants): RIQN, the default, needs neither.
DENSE_METHODS = {"dense": ("drnea_jacobian", "lu_solve_inplace", "gj_inverse")}
VI_BATCH = Variants(vi_batch, DENSE_METHODS)
VI_ROLLOUT = Variants(vi_rollout, DENSE_METHODS)

@register("variational", doc="variational integrator (paper 004): DEL by DRNEA, solved by RIQN (O(n))",
          method="riqn")
class Variational(Integrator):
    """Variational integrator on the trapezoidal discrete Lagrangian (paper 004).

    Options: ``method`` ("riqn" | "newton" | "broyden"), ``ig`` (1, 2, 3: initial guess of §3.3,
    default 3), ``tol`` (max-norm of the update, rad/m; default 1e-12), ``max_iter`` (default 50),
    ``on_fail`` ("warn" | "raise" | "ignore") for steps that did not converge.
    """

    implicit = True
    OPTIONS = (
        Option("method", "riqn", "root finder of the DEL equations", "str", tuple(METHODS)),
        Option("ig", 3, "initial guess of paper 004 Sec. 3.3", "int", (1, 2, 3)),
        Option("tol", 1e-12, "converged when the update's max-norm is below this (rad/m)", "float"),
        Option("max_iter", 50, "solver iteration limit", "int"),
        Option("on_fail", "warn", "what a step that did not converge does", "str", ("warn", "raise", "ignore")),
    )

    def __init__(self, model, scene=None, method="riqn", ig=3, tol=1e-12, max_iter=50, on_fail="warn", **options):
        super().__init__(model, scene, **options)
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
        if self.scene.kernel_arrays(model).npts > 0:
            raise InputError("the variational integrator does not handle contact yet (scene has contact points)")
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
        VI_BATCH(dense=self.method != "riqn")(self.model.k, self._m0, kc, w, dw, vw, q, v, dt, METHODS[self.method],
                 self.ig, self.tol, self.max_iter, qn, vn, e, stats)
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
        from pbsim.control.control import Control

        dt = check_dt(dt)
        steps, every = int(steps), int(every)
        if steps < 1 or every < 1:
            raise InputError(f"steps and every must be >= 1, got steps={steps!r}, every={every!r}")
        B = state.batch
        w, dw, vw = self._buffers(B)
        if control is None:  # the no-control arrays once per batch size (building them is most of a call's overhead)
            if getattr(self, "_kc0", (None,))[0] != B:
                self._kc0 = (B, Control().kernel_arrays(self.model, B))
            kc = self._kc0[1]
        else:
            kc = control.kernel_arrays(self.model, B)
        q = np.array(state.q, dtype=np.float64, order="C")
        v = np.array(state.v, dtype=np.float64, order="C")
        F = steps // every
        qo = np.zeros((B, F, self.model.nq))
        vo = np.zeros((B, F, self.model.nv))
        eo = np.zeros((B, F, 2))
        its = np.zeros((B, steps))
        stats = np.zeros((B, 3))
        VI_ROLLOUT(dense=self.method != "riqn")(self.model.k, self._m0, kc, w, dw, vw, q, v, np.empty_like(q), np.empty_like(v), dt,
                   METHODS[self.method], self.ig, self.tol, self.max_iter, steps, every, qo, vo, eo, its, stats)
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


@register("variational_broyden", doc="variational integrator, DEL by DRNEA solved by Broyden's method",
          method="broyden")
class VariationalBroyden(Variational):
    """Variational integrator with Broyden's method (baseline of paper 004 §4.3)."""
