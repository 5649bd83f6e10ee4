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
from pbsim.jit import CompileWatch
from pbsim_viewer.keyframes import SessionKeyframes
from pbsim_viewer.readouts import SessionReadouts

DT_MIN, DT_MAX = 1e-4, 0.2
FREE, BALL = 3, 2  # pbsim.dynamics.joints codes (Model.jtype)


class Session(SessionReadouts, SessionKeyframes):
    """Model + scene + state + integrator + SPD parameters + histories.

    The session is paused by default.  ``update(wall_dt)`` advances in real time while playing,
    ``step_once()`` advances one step; a failing step pauses and sets :attr:`message`.
    Keyframes: :class:`~pbsim_viewer.keyframes.SessionKeyframes`; what the panel reads
    (tracking error, contact forces, histories ...): :class:`~pbsim_viewer.readouts.SessionReadouts`.
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
        ring: int = 1000,
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
        # speed: simulated seconds per real second the viewer aims at (1 = real time); never faster
        self.real_time_factor_target = 1.0
        self._sim_debt = 0.0  # simulated time owed to the wall clock (s), at most one frame's worth kept
        self._rtf_window: deque = deque()  # (wall time, simulated time) pairs of the last second
        self.fps = 0.0  # frames per second of the window (set by the viewer)
        self.step_requests = 0  # single steps asked for by the panel / keys (run by update)
        # ring buffer of recent states (scrub slider, rewind on divergence); scrub_index None = live
        self.ring: deque = deque(maxlen=ring)
        self.scrub_index: int | None = None
        # external push (ctrl-drag): (body, point in the body frame, world force [N]) or None
        self.perturb: tuple[int, np.ndarray, np.ndarray] | None = None
        self._avail: dict | None = None  # integrator name -> reason it cannot run here (None: it can)
        self.unconverged = 0  # steps whose solver did not converge (kept after the first pause)
        self.accept_unconverged = False
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

    def integrator_problems(self) -> dict[str, str | None]:
        """For every registered integrator, why it cannot run on this model and scene (the
        message of ``pbsim.integrators.make``), or None when it can (computed once)."""
        if self._avail is None:
            self._avail = {}
            for nm in self.integrators:
                try:
                    pbsim.integrators.make(nm, self.model, self.scene)
                    self._avail[nm] = None
                except Exception as e:  # noqa: BLE001 - the reason is shown as a tooltip
                    self._avail[nm] = f"{type(e).__name__}: {e}"
        return self._avail

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
        self.notice = ""
        self.unconverged = 0
        self.accept_unconverged = False
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

    def perturb_torque(self, q=None) -> np.ndarray | None:
        """(nv,) joint torques of the current push (:attr:`perturb`) at ``q``: ``J^T f`` through
        :func:`pbsim.control.body_wrench_torque`, the API's external-force input; None without one."""
        if self.perturb is None:
            return None
        from pbsim.control import body_wrench_torque

        body, point, force = self.perturb
        return body_wrench_torque(self.model, self.q if q is None else q, int(body), force=force, point=point)

    def control(self) -> "pbsim.Control":
        tau = self.perturb_torque()
        if self.drive_actuators and self.model.nu:
            return pbsim.Control(ctrl=self.ctrl.copy(), tau=tau)
        return pbsim.Control(mode="spd", kp=self.kp.copy(), kd=self.kd.copy(), q_ref=self.q_ref, tau=tau)

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
        self.ring.clear()
        self.ring.append((self.state.copy(), 0))
        self.unconverged = 0
        self.accept_unconverged = False
        self.scrub_index = None
        self._sim_debt = 0.0
        self._rtf_window.clear()
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

    def _fail(self, why: str, rewind: bool = False):
        """Pause; back to the last good state.  ``rewind`` (a divergence): back to the newest
        buffered state that satisfies :meth:`ring_verdicts` (the oldest buffered one when none do)."""
        t_fail = float(self.last_good.t)
        self.failed = True
        self.playing = False
        self.perturb = None
        where = "the last good state"
        if rewind and len(self.ring) > 1:
            ok = self.ring_verdicts()
            good = np.flatnonzero(ok)
            k = int(good[-1]) if len(good) else 0
            st, n = self.ring[k]
            if k < len(self.ring) - 1:
                while len(self.ring) > k + 1:
                    self.ring.pop()
                self.last_good = st.copy()
                self.steps = n
                where = (
                    f"the last state within the divergence rule's energy bound ({len(ok) - 1 - k} steps back)"
                    if len(good)
                    else "the oldest buffered state (none was within the rule's energy bound)"
                )
        self.state = self.last_good.copy()
        self.message = (
            f"{self.integrator_name} failed at t = {t_fail:.4f} s "
            f"(dt = {self.dt:g} s): {why}; paused at {where}, t = {self.last_good.t:.4f} s"
        )

    def step_once(self) -> bool:
        """One integrator step; returns False (and pauses) when the step fails."""
        if self._integrator is None and not self.set_integrator(self.integrator_name):
            self._fail(self.message)
            return False
        self._leave_scrub()
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
            self._fail(f"diverged ({why})", rewind=True)
            return False
        if np.any(diag.nan) or not (np.all(np.isfinite(new.q)) and np.all(np.isfinite(new.v))):
            self._fail("diverged (NaN or inf in the state)")
            return False
        if diag.converged is not None and not np.all(diag.converged):
            res = "" if diag.residual is None else f", residual {float(np.max(diag.residual)):.3g}"
            it = "" if diag.iterations is None else f" after {int(np.max(diag.iterations))} iterations"
            self.unconverged += 1
            if not self.accept_unconverged:
                # the first one pauses; Play (or Step) goes on, keeping such steps while the
                # divergence rule holds (counted in the panel)
                self.accept_unconverged = True
                self._fail(f"solver did not converge{it}{res}; Play keeps such steps while the divergence rule holds")
                return False
            self.notice = f"{self.unconverged} steps did not converge (last{it}{res}); kept: the divergence rule holds"
        self.state = new
        self.last_good = new.copy()
        self.steps += 1
        self.ring.append((new.copy(), self.steps))
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

    def update(self, wall_dt: float, now: float | None = None) -> int:
        """Advance simulated time by ``speed * wall_dt`` while playing (``speed`` =
        :attr:`real_time_factor_target`), never faster: the simulated time owed is carried over
        between frames, so a step longer than a frame (dt > 1/60 s) waits for the wall clock;
        stepping stops after ``max_step_time`` of wall time per frame (the simulation then runs
        slower than asked, and the debt beyond one frame is dropped).  Single steps asked for
        (:attr:`step_requests`) run here too.  :attr:`rtf` is simulated over wall time in the
        last second of frames (``now``: the frame's wall clock, default ``time.perf_counter()``).
        Returns the number of steps taken."""
        now = time.perf_counter() if now is None else now
        n = 0
        while self.step_requests > 0:
            self.step_requests -= 1
            self.pause()
            n += int(self.step_once())
        if not self.playing:
            self.rtf = 0.0
            self._rtf_window.clear()
            self._sim_debt = 0.0
            return n
        wall_dt = max(float(wall_dt), 0.0)
        self._sim_debt += self.real_time_factor_target * wall_dt
        t_start = time.perf_counter()
        while self._sim_debt >= self.dt * (1 - 1e-9) and self.playing:
            if not self.step_once():
                break
            self._sim_debt -= self.dt
            n += 1
            if time.perf_counter() - t_start > self.max_step_time:
                break
        # what could not be done this frame is dropped beyond one step (no catch-up burst)
        self._sim_debt = min(max(self._sim_debt, 0.0), max(self.dt, self.real_time_factor_target * wall_dt))
        if not self.playing:
            self._sim_debt = 0.0
        w = self._rtf_window
        w.append((now, self.time))
        while len(w) > 2 and now - w[0][0] > 1.0:
            w.popleft()
        if len(w) >= 2 and w[-1][0] > w[0][0]:
            self.rtf = (w[-1][1] - w[0][1]) / (w[-1][0] - w[0][0])
        return n

    # ------------------------------------------------------------------ history (scrub) and state edits
    def scrub(self, index: int) -> None:
        """Show buffered state ``index`` (0 = oldest; -1 or len-1 = newest) and pause; stepping
        or playing continues from it and drops the states after it."""
        if not self.ring:
            return
        k = int(index) % len(self.ring)
        self.pause()
        st, n = self.ring[k]
        self.state = st.copy()
        self.steps = n
        self.scrub_index = None if k == len(self.ring) - 1 else k

    def step_back(self, n: int = 1) -> bool:
        """Back ``n`` buffered steps (paused); False at the oldest state."""
        k = (len(self.ring) - 1 if self.scrub_index is None else self.scrub_index) - int(n)
        if k < 0 or not self.ring:
            return False
        self.scrub(k)
        return True

    def _leave_scrub(self):
        """Continue from a scrubbed state: forget the buffered future."""
        if self.scrub_index is not None:
            while len(self.ring) > self.scrub_index + 1:
                self.ring.pop()
            self.scrub_index = None
            self.last_good = self.state.copy()
            self.failed = False

    def _edited(self):
        """After q or v were set by hand: a fresh start for the rule and the buffer's tail."""
        self._leave_scrub()
        self.state.reset_history()
        self.last_good = self.state.copy()
        self.ring.append((self.state.copy(), self.steps))
        self.failed = False
        self.message = ""

    def q_sliders(self) -> list[tuple[int, str, float, float]]:
        """(q index, name, lo, hi) of every coordinate a slider can set: the 1-DOF joints
        (range: the joint limits, else +-pi rad / +-1 m) and a floating base's position."""
        m, out = self.model, []
        for i in range(m.nb):
            jt, iq, iv = int(m.jtype[i]), int(m.iq[i]), int(m.iv[i])
            if jt in (0, 1):
                lo, hi = float(m.lower[iv]), float(m.upper[iv])
                if not (math.isfinite(lo) and math.isfinite(hi) and hi > lo):
                    lo, hi = (-math.pi, math.pi) if jt == 0 else (-1.0, 1.0)
                out.append((iq, m.joint_names[i], lo, hi))
            elif jt == FREE:
                for k in range(3):
                    c = float(self.q0[iq + k])
                    out.append((iq + k, f"{m.joint_names[i]}.{'xyz'[k]}", c - 2.0, c + 2.0))
        return out

    def set_q(self, iq: int, value: float) -> None:
        """Set one coordinate of q (a 1-DOF joint's angle or a base position), velocities kept;
        meant for a paused session (the panel offers it only then)."""
        q = self.state.q.copy()
        q[0, int(iq)] = float(value)
        self.state = pbsim.State(q, self.state.v.copy(), self.state.t)
        self._edited()

    def with_object(
        self,
        shape: str = "box",
        size=(0.05, 0.05, 0.05),
        mass: float = 0.5,
        height: float = 0.4,
        body: int | None = None,
    ) -> "Session":
        """A new session: this one's model and state with a free object (:func:`pbsim.free_object`)
        ``height`` above ``body`` (default: the highest body), at rest; the scene keeps this one's
        environment shapes and contact parameters; integrator, dt, gains and play state carry
        over.  The object touches every body (:func:`pbsim.combine`)."""
        m = self.model
        T = pbsim.forward_kinematics(m, self.q)
        up = -np.asarray(m.gravity, float)
        up = up / np.linalg.norm(up) if np.linalg.norm(up) > 0 else np.array([0.0, 0.0, 1.0])
        if body is None:
            body = int(np.argmax(T[:, :3, 3] @ up)) if m.nb else -1
        base = T[body, :3, 3] if body >= 0 else np.zeros(3)
        pos = base + height * up
        name = f"{shape}{sum(1 for n in m.body_names if n.startswith(shape))}"
        obj = pbsim.free_object(shape, size, mass, name)
        new = pbsim.combine(m, (obj, pos), name=m.name)
        sc = self.scene
        scene = pbsim.make_scene(
            new,
            ground=None,
            environment=sc.all_environment(),
            mu=sc.mu,
            stiffness=sc.stiffness,
            damping=sc.damping,
            friction_eps=sc.friction_eps,
        )
        q0 = np.concatenate([self.q0, new.default_configuration()[m.nq :]])
        out = Session(
            new, scene=scene, integrator=self.integrator_name, dt=self.dt, kp=self.kp_global, kd=self.kd_global, q0=q0
        )
        q = np.concatenate([self.q, new.default_configuration()[m.nq :]])
        v = np.concatenate([self.state.v[0], np.zeros(new.nv - m.nv)])
        out.state = pbsim.State.make(new, q=q, v=v, t=float(self.state.t))
        out.last_good = out.state.copy()
        out.ring.clear()
        out.ring.append((out.state.copy(), 0))
        out.real_time_factor_target = self.real_time_factor_target
        if self.playing:
            out.play()
        return out
