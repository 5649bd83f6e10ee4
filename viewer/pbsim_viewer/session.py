"""Simulation session driven by the viewer (and by tests): no GL anywhere in this file.

Physics goes only through pbsim's public API: ``pbsim.integrators.make``, ``Integrator.step``,
``pbsim.Control``, ``pbsim.State``, ``pbsim.difference``, ``pbsim.energy``.
"""

from __future__ import annotations

import math
import time
from collections import deque

import numpy as np

import pbsim
from pbsim.backends.kernel import CompileWatch

DT_MIN, DT_MAX = 1e-4, 0.2
FREE, BALL = 3, 2  # pbsim.dynamics.joints codes (Model.jtype)


class Session:
    """Model + scene + state + integrator + SPD parameters + histories.

    The session is paused by default.  ``update(wall_dt)`` advances in real time while playing,
    ``step_once()`` advances one step; a failing step pauses and sets :attr:`message`.
    """

    def __init__(
        self,
        model,
        scene=None,
        integrator: str | None = None,
        dt: float = 2e-3,
        kp: float = 300.0,
        kd: float = 10.0,
        q0=None,
        history: int = 600,
        max_step_time: float = 0.03,
    ):
        self.model = model
        self.scene = scene if scene is not None else pbsim.Scene()
        names = pbsim.integrators.available()
        self.integrator_name = integrator if integrator is not None else ("euler" if "euler" in names else names[0])
        self.dt = float(np.clip(dt, DT_MIN, DT_MAX))
        nv = model.nv
        # actuated DOFs: every DOF except a floating base's six
        self.actuated = np.ones(nv, bool)
        self.dof_names: list[str] = []
        self.dof_joint: list[int] = []
        for i in range(model.nb):
            j0, nvj = int(model.iv[i]), int(model.nvj[i])
            if int(model.jtype[i]) == FREE:
                self.actuated[j0 : j0 + nvj] = False
            for k in range(nvj):
                suffix = "" if nvj == 1 else "xyz"[k % 3] if nvj == 3 else "xyzxyz"[k] + ("_lin" if k < 3 else "_ang")
                self.dof_names.append(model.joint_names[i] + (f".{suffix}" if suffix else ""))
                self.dof_joint.append(i)
        self.kp_global = float(kp)
        self.kd_global = float(kd)
        self.kp = np.where(self.actuated, self.kp_global, 0.0)  # (nv,) per DOF
        self.kd = np.where(self.actuated, self.kd_global, 0.0)
        self.q0 = np.array(model.default_configuration() if q0 is None else q0, dtype=float)
        # joint targets as tangent offsets from q0 (rotation vectors for ball joints), per DOF
        self.target = np.zeros(nv)
        # the file's actuators (MJCF <actuator>): driven by Control(ctrl=...) when drive_actuators is on,
        # the same path as pbsim.Control(ctrl=u) and `pbsim rollout --ctrl`
        self.ctrl = np.zeros(model.nu)
        self.drive_actuators = False
        self.playing = False
        self.real_time_factor_target = 1.0
        self.max_step_time = max_step_time
        self.message = ""
        self.notice = ""  # compile notice (first use of an integrator), shown in the panel
        self._warm = False  # the current integrator has taken a step (its kernels are loaded)
        self.compile_s = 0.0
        self.failed = False
        self.ms_per_step = 0.0
        self.rtf = 0.0
        self.steps = 0
        self.hist_t = deque(maxlen=history)
        self.hist_energy = deque(maxlen=history)
        self.hist_iters = deque(maxlen=history)
        self.hist_err = deque(maxlen=history)
        self._integrator = None
        self._integrator_key = None
        self._q_ref = None
        self._q_ref_of = None
        m = model
        self._err_1dof = np.array([int(m.iq[i]) for i in range(m.nb) if int(m.jtype[i]) in (0, 1)], int)
        self._err_ball = np.array([int(m.iq[i]) for i in range(m.nb) if int(m.jtype[i]) == BALL], int)
        self.reset()

    # ------------------------------------------------------------------ parameters
    @property
    def integrators(self) -> list[str]:
        return pbsim.integrators.available()

    def set_integrator(self, name: str) -> bool:
        """Switch integrator (mid-run is fine); on error keep the old one and set :attr:`message`."""
        if name == self.integrator_name and self._integrator is not None:
            return True
        try:
            integ = pbsim.integrators.make(name, self.model, self.scene)
        except Exception as e:  # noqa: BLE001 - shown in the panel, never crashes the window
            self.message = f"cannot use integrator {name!r}: {type(e).__name__}: {e}"
            return False
        self._integrator, self._integrator_key, self.integrator_name = integ, name, name
        self._warm = False
        self.message = ""
        self.state.reset_history()  # two-step methods restart from the current state
        self.failed = False
        return True

    def set_dt(self, dt: float) -> float:
        dt = float(dt)
        if not math.isfinite(dt):
            return self.dt
        self.dt = float(min(max(dt, DT_MIN), DT_MAX))
        self.state.reset_history()
        return self.dt

    def set_kp(self, kp: float, dof: int | None = None):
        kp = max(0.0, float(kp))
        if dof is None:
            self.kp_global = kp
            self.kp[self.actuated] = kp
        elif self.actuated[dof]:
            self.kp[dof] = kp

    def set_kd(self, kd: float, dof: int | None = None):
        kd = max(0.0, float(kd))
        if dof is None:
            self.kd_global = kd
            self.kd[self.actuated] = kd
        elif self.actuated[dof]:
            self.kd[dof] = kd

    def set_target(self, dof: int, value: float):
        if self.actuated[dof]:
            self.target[dof] = float(value)
            self._q_ref = None

    def zero_targets(self):
        self.target[:] = 0.0
        self._q_ref = None

    def target_range(self, dof: int) -> tuple[float, float]:
        """Slider range of a DOF's target offset: the joint limits (relative to q0) or ±pi."""
        lo, hi = float(self.model.lower[dof]), float(self.model.upper[dof])
        i = self.dof_joint[dof]
        if int(self.model.jtype[i]) in (0, 1) and math.isfinite(lo) and math.isfinite(hi) and hi > lo:
            q0 = self.q0[int(self.model.iq[i])]
            return lo - q0, hi - q0
        return -math.pi, math.pi

    @property
    def q_ref(self) -> np.ndarray:
        """``q0 (+) target``; cached (recomputed when a target changes or on reset)."""
        if self._q_ref is None or not np.array_equal(self._q_ref_of, self.target):
            self._q_ref = pbsim.integrate(self.model, self.q0, self.target)
            self._q_ref_of = self.target.copy()
        return self._q_ref

    def control(self) -> "pbsim.Control":
        if self.drive_actuators and self.model.nu:
            return pbsim.Control(ctrl=self.ctrl.copy())
        return pbsim.Control(mode="spd", kp=self.kp.copy(), kd=self.kd.copy(), q_ref=self.q_ref)

    def ctrl_range(self, a: int) -> tuple[float, float]:
        """Slider range of actuator ``a``: its ctrlrange, else +-1."""
        lo, hi = (float(x) for x in self.model.actuators.ctrlrange[a])
        return (lo if np.isfinite(lo) else -1.0, hi if np.isfinite(hi) else 1.0)

    def set_ctrl(self, a: int, value: float):
        lo, hi = self.ctrl_range(a)
        self.ctrl[a] = float(np.clip(value, lo, hi))

    # ------------------------------------------------------------------ running
    def play(self):
        self.playing = True

    def pause(self):
        self.playing = False

    def toggle(self):
        self.playing = not self.playing

    def reset(self):
        """Back to q0 at rest, t = 0; clears the failure message and histories."""
        self._q_ref = None
        self.state = pbsim.State.make(self.model, q=self.q0)
        self.last_good = self.state.copy()
        self.message = ""
        self.failed = False
        self.steps = 0
        for h in (self.hist_t, self.hist_energy, self.hist_iters, self.hist_err):
            h.clear()
        if self._integrator is None or self._integrator_key != self.integrator_name:
            self._integrator = None
            self.set_integrator(self.integrator_name)

    @property
    def time(self) -> float:
        return float(self.state.t)

    @property
    def q(self) -> np.ndarray:
        return self.state.q[0]

    def tracking_error(self, q=None) -> float:
        """RMS over actuated DOFs of ``q (-) q_ref`` (rad or m)."""
        q = self.q if q is None else q
        n = int(self.actuated.sum())
        if n == 0:
            return 0.0
        r = self.q_ref
        # numpy on purpose (called every step): |q (-) q_ref|^2 is (dq)^2 per 1-DOF joint and
        # the squared relative rotation angle per ball joint
        sq = float(np.sum((q[self._err_1dof] - r[self._err_1dof]) ** 2))
        for k in self._err_ball:
            c = abs(
                float(np.dot(q[k : k + 4], r[k : k + 4]))
                / max(np.linalg.norm(q[k : k + 4]) * np.linalg.norm(r[k : k + 4]), 1e-300)
            )
            sq += (2.0 * math.acos(min(c, 1.0))) ** 2
        return math.sqrt(sq / n)

    def _fail(self, why: str):
        self.failed = True
        self.playing = False
        self.state = self.last_good.copy()
        self.message = (
            f"{self.integrator_name} failed at t = {self.last_good.t:.4f} s "
            f"(dt = {self.dt:g} s): {why}; paused at the last good state"
        )

    def step_once(self) -> bool:
        """One integrator step; returns False (and pauses) when the step fails."""
        if self._integrator is None and not self.set_integrator(self.integrator_name):
            self._fail(self.message)
            return False
        t0 = time.perf_counter()
        try:
            with CompileWatch(self.integrator_name) as cw:  # stderr line on a cache miss
                new, diag = self._integrator.step(self.state, self.control(), self.dt)
        except Exception as e:  # noqa: BLE001
            self._fail(f"{type(e).__name__}: {e}")
            return False
        wall = time.perf_counter() - t0 - cw.seconds
        if not self._warm:
            self._warm = True
            self.compile_s = cw.seconds
            self.notice = (
                f"compiled kernels for {self.integrator_name} in {cw.seconds:.0f} s (cached from now on)"
                if cw.seconds > 0.5
                else ""
            )
        # the first step after a (re)start may include JIT compilation: do not let it seed the average
        self.ms_per_step = 1e3 * wall if self.steps <= 1 else 0.9 * self.ms_per_step + 100.0 * wall
        # the divergence rule every integrator shares (pbsim.integrators.divergence, applied by
        # Integrator.step): NaN/inf, a joint speed beyond the limit, or the energy beyond the bound
        if diag.diverged is not None and np.any(diag.diverged):
            why = next((w for w in (diag.divergence or []) if w), "NaN or inf in the state")
            self._fail(f"diverged ({why})")
            return False
        if np.any(diag.nan) or not (np.all(np.isfinite(new.q)) and np.all(np.isfinite(new.v))):
            self._fail("diverged (NaN or inf in the state)")
            return False
        if diag.converged is not None and not np.all(diag.converged):
            res = "" if diag.residual is None else f", residual {float(np.max(diag.residual)):.3g}"
            it = "" if diag.iterations is None else f" after {int(np.max(diag.iterations))} iterations"
            self._fail(f"solver did not converge{it}{res}")
            return False
        self.state = new
        self.last_good = new.copy()
        self.steps += 1
        e = float(np.asarray(diag.energy).reshape(-1)[0]) if diag.energy is not None else float("nan")
        self.hist_t.append(float(new.t))
        self.hist_energy.append(e)
        self.hist_iters.append(float(np.max(diag.iterations)) if diag.iterations is not None else 0.0)
        self.hist_err.append(self.tracking_error(new.q[0]))
        return True

    def first_use_notice(self) -> bool:
        """True (once per integrator) when the next step is the integrator's first: the notice is
        set, and the caller draws a frame with it before stepping (which may compile for a while)."""
        if self._warm or self.notice.startswith("loading"):
            return False
        est = CompileWatch(self.integrator_name).estimate_s
        self.notice = (
            f"loading kernels for {self.integrator_name}... (the first use on this machine "
            f"compiles them{f', ~{est:.0f} s' if est else ''})"
        )
        return True

    def update(self, wall_dt: float) -> int:
        """Advance simulated time by ``wall_dt`` (real time) while playing, within a wall-time
        budget of ``max_step_time``; updates :attr:`rtf`.  Returns the number of steps taken."""
        if not self.playing:
            self.rtf = 0.0
            return 0
        n_want = max(1, int(round(self.real_time_factor_target * max(wall_dt, 0.0) / self.dt)))
        t_start, t_sim0, n = time.perf_counter(), self.time, 0
        while n < n_want and self.playing:
            if not self.step_once():
                break
            n += 1
            if time.perf_counter() - t_start > self.max_step_time:
                break
        spent = time.perf_counter() - t_start
        if wall_dt > 0:
            self.rtf = (self.time - t_sim0) / max(wall_dt, spent)
        return n

    def histories(self) -> dict[str, np.ndarray]:
        return {
            "t": np.array(self.hist_t),
            "energy": np.array(self.hist_energy),
            "iterations": np.array(self.hist_iters),
            "tracking_error": np.array(self.hist_err),
        }
