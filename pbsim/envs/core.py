"""Gymnasium environments over any pbsim model and integrator.

:class:`RobotEnv` (one robot) and :class:`RobotVectorEnv` (``B`` copies) share one core,
:class:`_Core`: ``B`` rows of (q, v) stepped together -- one batched kernel call per environment
step (:class:`pbsim.backends.cpu.CpuBatch` runs the ``frame_skip`` integrator steps of every row
inside one call) for every method with a step kernel, else ``frame_skip`` calls of the
integrator's batched ``step``.  A single environment is the core with one row, so the vector
environment equals ``B`` single environments stepped one by one, bit for bit (rows are
independent in every kernel; tests/envs/test_envs.py).

Everything a task supplies is batched over rows: ``observation(model, q, v) -> (B, n_obs)``,
``reward(model, q_before, v_before, q_after, v_after, action, dt) -> (reward (B,), info)`` with
``info`` a dict of (B,) arrays, ``terminated(model, q, v) -> (B,) bool`` (``dt``: the time of one
environment step, ``dt * frame_skip``).  A row that diverged by the shared rule of
:mod:`pbsim.integrators.divergence` against its episode's start (non-finite, a joint speed beyond
the bound, an energy gain beyond 10x the model's energy scale) terminates with
``info["diverged"]`` set (reward 0 and observation zeroed where the state is non-finite).

Control modes (the action's meaning):

- ``"ctrl"``: the model's actuators (MJCF ``<actuator>``) through ``Control(ctrl=action)``; the
  action space is their ``ctrlrange``;
- ``"torque"``: ``tau = action * action_scale`` on the actuated DOFs;
- ``"spd"`` / ``"pd"``: joint targets ``q_ref = q_nominal + action * action_scale`` on the actuated
  DOFs, tracked by stable PD (paper 001) / plain PD with gains ``kp``, ``kd`` (``q_nominal``
  defaults to the reset pose ``q0``, itself the model's default configuration by default).

The actuated DOFs (``actuated``: joint names) default to the actuators' joints, else every
1-DOF joint.

``device="cuda"`` steps the rows on the GPU (:class:`pbsim.backends.cuda.CudaBatch`, every method
with a step kernel): the state is sent before and fetched after each environment step (the task
callables and autoreset run on the host), so the results equal the CPU's up to the device's
rounding; the compiled task step (``task_kernel``) is a CPU path and is not used there.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Callable

import gymnasium
import numpy as np
from gymnasium import spaces
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode, VectorEnv

from pbsim.backends.cpu import CpuBatch
from pbsim.contact import default_scene
from pbsim.control import Control
from pbsim.dynamics.api import integrate
from pbsim.errors import InputError
from pbsim.integrators import State, make
from pbsim.integrators.base import step_spec, validate_options
from pbsim.integrators.divergence import check_run, reference_energy

CONTROL_MODES = ("ctrl", "torque", "spd", "pd")


def default_observation(model, q, v):
    """``[q, v]`` per row."""
    return np.concatenate([q, v], axis=1)


def _no_reward(model, q0, v0, q1, v1, action, dt):
    return np.zeros(q1.shape[0]), {}


def _never(model, q, v):
    return np.zeros(q.shape[0], bool)


class _Core:
    """``B`` rows of one robot: the model, integrator, control mapping and task callables."""

    def __init__(
        self,
        B: int,
        model,
        integrator: str = "euler",
        dt: float = 0.002,
        frame_skip: int = 1,
        control: str = "ctrl",
        *,
        reward: Callable | None = None,
        terminated: Callable | None = None,
        observation: Callable | None = None,
        scene=None,
        q0=None,
        v0=None,
        q_nominal=None,
        reset_noise: float = 0.0,
        actuated=None,
        action_scale=1.0,
        kp=0.0,
        kd=0.0,
        integrator_options: dict | None = None,
        task_kernel=None,
        fast: bool = True,
        device: str = "cpu",
    ):
        if control not in CONTROL_MODES:
            raise InputError(f"control must be one of {CONTROL_MODES}, got {control!r}")
        if not isinstance(integrator, str):
            raise InputError(f"integrator must be a name (pbsim integrators), got {integrator!r}")
        self.B, self.model, self.integrator = int(B), model, integrator
        self.dt, self.frame_skip = float(dt), int(frame_skip)
        if not (self.dt > 0 and np.isfinite(self.dt)) or self.frame_skip < 1:
            raise InputError(f"dt must be > 0 and frame_skip >= 1, got dt={dt}, frame_skip={frame_skip}")
        self.mode = control
        self.reward_fn = reward or _no_reward
        self.terminated_fn = terminated or _never
        self.observation_fn = observation or default_observation
        opts = dict(integrator_options or {})
        validate_options(integrator, opts)
        self.scene = default_scene(model) if scene is None else scene
        self.kernel = step_spec(integrator) is not None
        if device not in ("cpu", "cuda"):
            raise InputError(f"device must be 'cpu' or 'cuda', got {device!r}")
        self.device = device
        if device == "cuda":  # the rows live on the GPU; q, v here are host copies, sent and fetched each step
            if not self.kernel:
                raise InputError(f"integrator {integrator!r} has no step kernel, so no GPU path (device='cuda')")
            from pbsim.backends.cuda import CudaBatch

            self.batch = CudaBatch(model, integrator, self.scene, self.B, **opts)
            self.q, self.v = np.zeros((self.B, model.nq)), np.zeros((self.B, model.nv))
        elif self.kernel:
            self.batch = CpuBatch(model, integrator, self.scene, self.B, **opts)
            self.q, self.v = self.batch.q, self.batch.v  # the batch's own arrays, stepped in place
        else:  # no step kernel (pbad3/4, variational): the integrator's batched step, frame_skip times
            self.integ = make(integrator, model, self.scene, **opts)
            self.q, self.v = np.zeros((self.B, model.nq)), np.zeros((self.B, model.nv))
        self.q0 = np.array(model.default_configuration() if q0 is None else q0, np.float64).reshape(model.nq)
        self.v0 = np.zeros(model.nv) if v0 is None else np.array(v0, np.float64).reshape(model.nv)
        self.q_nominal = self.q0 if q_nominal is None else np.array(q_nominal, np.float64).reshape(model.nq)
        self.reset_noise = float(reset_noise)
        self.q_start, self.v_start = np.tile(self.q0, (self.B, 1)), np.tile(self.v0, (self.B, 1))
        self._e_start = None  # reference_energy of the rows' starts (kept between resets)
        self._actuation(actuated, action_scale, kp, kd)
        n_obs = self.observation_fn(model, self.q0[None], self.v0[None]).shape[1]
        self.observation_space = spaces.Box(-np.inf, np.inf, (n_obs,), np.float64)
        self.n_action = int(self.action_space.shape[0])
        use_fast = fast and task_kernel is not None and self.kernel and device == "cpu"
        self.fast = self._fast_step(task_kernel, n_obs) if use_fast else None

    def _fast_step(self, task_kernel, n_obs):
        """The compiled environment step (:mod:`pbsim.envs.step`) for this control, or None
        where it maps no such control (actuators other than motors)."""
        from pbsim.envs.step import A_MOTORS, A_TARGETS, A_TORQUE, EnvStep
        from pbsim.integrators.divergence import DEFAULT, dof_ranges, energy_scale

        m, B = self.model, self.B
        fn, prm, info_names = task_kernel
        if self.mode == "ctrl":
            act = m.actuators
            if (act.kind != 0).any() or (act.tendon >= 0).any() or (act.site >= 0).any():  # servos, tendon/site: Python
                return None
            c0 = Control(ctrl=np.zeros((B, act.nu)))
            amode = A_MOTORS
            arrays = dict(
                act_dof=act.dof, act_gear=act.gear, act_gain=act.gain, act_ctrl=act.ctrlrange, act_force=act.forcerange
            )
        elif self.mode == "torque":
            c0, amode = Control(tau=np.zeros((B, m.nv))), A_TORQUE
            arrays = dict(dof_v=self.dof_v, scale=self.scale)
        else:
            c0 = Control(mode=self.mode, kp=self.kp, kd=self.kd, q_ref=np.tile(self.q_nominal, (B, 1)))
            amode = A_TARGETS
            arrays = dict(dof_q=self.dof_q, scale=self.scale, q_nominal=self.q_nominal)
        self.batch.set_control(c0)
        self._last_control = c0
        self.info_names = tuple(info_names)
        lim = [DEFAULT.speed_limit, DEFAULT.energy_factor, energy_scale(m)]
        return EnvStep(self.batch, fn, prm, n_obs, 3 + len(info_names), amode, arrays, lim, dof_ranges(m))

    def _actuation(self, actuated, action_scale, kp, kd):
        m = self.model
        act = getattr(m, "actuators", None)
        if self.mode == "ctrl":
            if act is None or act.nu == 0:
                raise InputError(f"control='ctrl' needs actuators; model {m.name!r} has none (use 'spd' or 'torque')")
            lo, hi = act.ctrlrange[:, 0], act.ctrlrange[:, 1]
            lo = np.where(np.isfinite(lo), lo, -1.0)
            hi = np.where(np.isfinite(hi), hi, 1.0)
            self.action_space = spaces.Box(lo.astype(np.float32), hi.astype(np.float32), dtype=np.float32)
            return
        if actuated is None:
            if act is not None and act.nu > 0:
                dofs = [int(d) for d in act.dof]
            else:
                dofs = [int(m.iv[i]) for i in range(m.nb) if m.nvj[i] == 1 and m.nqj[i] == 1]
        else:
            dofs = [m.idx_v(name).start for name in actuated]
        if not dofs:
            raise InputError(f"model {m.name!r} has no 1-DOF joints to actuate")
        vi = np.array(dofs, np.int64)
        # q index of each actuated DOF (1-DOF joints: the joint's one coordinate)
        qi = []
        for d in vi:
            body = int(np.flatnonzero((m.iv <= d) & (d < m.iv + m.nvj))[0])
            if m.nvj[body] != 1 or m.nqj[body] != 1:
                raise InputError("only 1-DOF joints can be actuated by an environment")
            qi.append(int(m.iq[body]))
        self.dof_v, self.dof_q = vi, np.array(qi, np.int64)
        n = len(vi)
        self.scale = np.array(np.broadcast_to(np.asarray(action_scale, np.float64), (n,)))
        self.kp = np.zeros(m.nv)
        self.kd = np.zeros(m.nv)
        self.kp[vi] = np.broadcast_to(np.asarray(kp, np.float64), (n,))
        self.kd[vi] = np.broadcast_to(np.asarray(kd, np.float64), (n,))
        self.action_space = spaces.Box(-1.0, 1.0, (n,), np.float32)

    # -- stepping ----------------------------------------------------------------------------
    def control(self, action: np.ndarray) -> Control:
        """The :class:`Control` of a (B, n_action) action."""
        a = np.asarray(action, np.float64).reshape(self.B, -1)
        if self.mode == "ctrl":
            return Control(ctrl=a)
        if self.mode == "torque":
            tau = np.zeros((self.B, self.model.nv))
            tau[:, self.dof_v] = a * self.scale
            return Control(tau=tau)
        q_ref = np.tile(self.q_nominal, (self.B, 1))
        q_ref[:, self.dof_q] += a * self.scale
        return Control(mode=self.mode, kp=self.kp, kd=self.kd, q_ref=q_ref)

    def advance(self, action):
        """One environment step of every row: ``frame_skip`` integrator steps under ``action``."""
        c = self.control(action)
        self._last_control = c
        if self.device == "cuda":  # rows may have been reset here since the last step: send them first
            self.batch.set_state(self.q, self.v)
            self.batch.set_control(c)
            self.batch.advance(self.frame_skip, self.dt)
            self.q[...], self.v[...] = self.batch.state()
            self._fallback = self.batch.fallback_steps()  # set_state zeroed the count
        elif self.kernel:
            f0 = self.batch.fallback_steps()
            self.batch.set_control(c)
            self.batch.advance(self.frame_skip, self.dt)
            self._fallback = None if f0 is None else self.batch.fallback_steps() - f0
        else:
            st = self.__dict__.get("_state")
            if st is None or st.q.shape[0] != self.B:
                st = State(self.q.copy(), self.v.copy())
            st.q, st.v = self.q.copy(), self.v.copy()
            for _ in range(self.frame_skip):
                st, _ = self.integ.step(st, c, self.dt)
            self.q[...], self.v[...] = st.q, st.v
            self._state = st

    def transition(self, action):
        """Step every row; ``(obs, reward, terminated, info)`` as (B, ·) arrays."""
        if self.fast is not None:
            return self._fast_transition(action)
        q_before, v_before = self.q.copy(), self.v.copy()
        self.advance(action)
        a = np.asarray(action, np.float64).reshape(self.B, -1)
        bad = ~(np.isfinite(self.q).all(axis=1) & np.isfinite(self.v).all(axis=1))
        # the shared divergence rule against each row's episode start (docs/reliability.md): a
        # joint speed beyond the bound or an energy gain beyond 10x the model's energy scale
        if self._e_start is None:
            self._e_start = reference_energy(self.model, SimpleNamespace(q=self.q_start, v=self.v_start))
        bad |= np.asarray(
            check_run(
                self.model,
                self.q_start,
                self.v_start,
                self.q,
                self.v,
                control=self._last_control,
                energy_start=self._e_start,
            )[0],
            bool,
        )
        q, v = self.q, self.v
        if not np.isfinite(q).all() or not np.isfinite(v).all():  # zeros where the observation and task see it
            fin = np.isfinite(q).all(axis=1) & np.isfinite(v).all(axis=1)
            q, v = np.where(fin[:, None], q, 0.0), np.where(fin[:, None], v, 0.0)
        rew, info = self.reward_fn(self.model, q_before, v_before, q, v, a, self.dt * self.frame_skip)
        term = np.asarray(self.terminated_fn(self.model, q, v), bool) | bad
        nonfinite = ~(np.isfinite(self.q).all(axis=1) & np.isfinite(self.v).all(axis=1))
        rew = np.where(nonfinite, 0.0, np.asarray(rew, np.float64))
        info = dict(info)
        info["diverged"] = bad
        if self.__dict__.get("_fallback") is not None:  # steps the kernel redid as sub-steps (StepSpec.fallback)
            info["fallback_steps"] = self._fallback
        return self.observe(q, v), rew, term, info

    def _fast_transition(self, action):
        """:meth:`transition` in one compiled call (:mod:`pbsim.envs.step`), same results."""
        a = np.ascontiguousarray(action, dtype=np.float64)
        if a.size != self.B * self.n_action:
            raise InputError(
                f"action must have shape ({self.n_action},) per environment ({self.B} environments); "
                f"got {np.shape(action)}"
            )
        a = a.reshape(self.B, self.n_action)
        if not np.isfinite(a).all():
            raise InputError("action holds NaN or inf")
        f = self.fast
        if self._e_start is None:
            f.e_start[:] = reference_energy(self.model, SimpleNamespace(q=self.q_start, v=self.v_start))
            self._e_start = f.e_start
        f0 = self.batch.fallback_steps()
        f(a, self.frame_skip, self.dt, self.dt * self.frame_skip)
        out = f.out
        bad = out[:, 2] > 0.5
        info = {k: out[:, 3 + i].copy() for i, k in enumerate(self.info_names)}
        info["diverged"] = bad
        if f0 is not None:  # steps the kernel redid as sub-steps (StepSpec.fallback)
            info["fallback_steps"] = self.batch.fallback_steps() - f0
        return f.obs.copy(), out[:, 0].copy(), out[:, 1] > 0.5, info

    def observe(self, q=None, v=None):
        obs = self.observation_fn(self.model, self.q if q is None else q, self.v if v is None else v)
        return np.asarray(obs, np.float64)

    def reset_row(self, b: int, rng: np.random.Generator):
        """Row ``b`` back to the start, perturbed by ``reset_noise`` (uniform, drawn from ``rng``:
        first nv numbers for q, in the tangent space, then nv for v)."""
        m, s = self.model, self.reset_noise
        q, v = self.q0.copy(), self.v0.copy()
        if s > 0:
            dq = rng.uniform(-s, s, m.nv)
            q = q + dq if m.nq == m.nv else integrate(m, q, dq)
            v = v + rng.uniform(-s, s, m.nv)
        self.q[b], self.v[b] = q, v
        self.q_start[b], self.v_start[b] = q, v
        self._e_start = None
        if not self.kernel:
            self._state = None


class RobotEnv(gymnasium.Env):
    """One robot as a gymnasium environment (see the module docstring for the arguments:
    ``model``, ``integrator``, ``dt``, ``frame_skip``, ``control``, the task callables ``reward``,
    ``terminated``, ``observation``, and ``scene``, ``q0``, ``v0``, ``reset_noise``, ``actuated``,
    ``action_scale``, ``kp``, ``kd``, ``integrator_options``).  ``self.dt`` is the time of one
    environment step (``dt * frame_skip``)."""

    metadata = {"render_modes": []}

    def __init__(
        self,
        model,
        integrator: str = "euler",
        dt: float = 0.002,
        frame_skip: int = 1,
        control: str = "ctrl",
        render_mode=None,
        **kw,
    ):
        self.core = _Core(1, model, integrator, dt, frame_skip, control, **kw)
        self.model = model
        self.observation_space = self.core.observation_space
        self.action_space = self.core.action_space
        self.dt = self.core.dt * self.core.frame_skip
        self.render_mode = render_mode

    @property
    def q(self) -> np.ndarray:
        return self.core.q[0].copy()

    @property
    def v(self) -> np.ndarray:
        return self.core.v[0].copy()

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.core.reset_row(0, self.np_random)
        return self.core.observe()[0], {}

    def step(self, action):
        obs, rew, term, info = self.core.transition(np.asarray(action)[None])
        return obs[0], float(rew[0]), bool(term[0]), False, {k: _item(x[0]) for k, x in info.items()}


def _item(x):
    return x.item() if isinstance(x, np.generic) else x


class RobotVectorEnv(VectorEnv):
    """``num_envs`` robots stepped together in one batched call per step, with gymnasium's
    next-step autoreset (:class:`gymnasium.vector.AutoresetMode.NEXT_STEP`, as ``SyncVectorEnv``:
    the step after an episode ends returns that environment's reset observation, reward 0) and
    the time limit ``max_episode_steps`` (truncation).  Environment ``i`` draws its reset noise
    from its own generator, seeded ``seed + i`` as ``SyncVectorEnv`` seeds its copies, so the
    results equal ``num_envs`` :class:`RobotEnv` stepped one by one, bit for bit."""

    metadata = {"render_modes": [], "autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(
        self,
        num_envs: int,
        model,
        integrator: str = "euler",
        dt: float = 0.002,
        frame_skip: int = 1,
        control: str = "ctrl",
        max_episode_steps: int | None = None,
        render_mode=None,
        **kw,
    ):
        if not isinstance(num_envs, (int, np.integer)) or isinstance(num_envs, (bool, np.bool_)):
            raise InputError(
                f"RobotVectorEnv(num_envs, model, ...): num_envs must be an integer, got "
                f"{type(num_envs).__name__}"
                + (" (the model goes second)" if isinstance(model, (int, np.integer)) else "")
            )
        if num_envs < 1:
            raise InputError(f"num_envs must be >= 1, got {num_envs}")
        self.num_envs = int(num_envs)
        self.core = _Core(self.num_envs, model, integrator, dt, frame_skip, control, **kw)
        self.model = model
        self.single_observation_space = self.core.observation_space
        self.single_action_space = self.core.action_space
        self.observation_space = gymnasium.vector.utils.batch_space(self.single_observation_space, self.num_envs)
        self.action_space = gymnasium.vector.utils.batch_space(self.single_action_space, self.num_envs)
        self.dt = self.core.dt * self.core.frame_skip
        self.max_episode_steps = max_episode_steps
        self.render_mode = render_mode
        self._rngs: list = [None] * self.num_envs
        self._elapsed = np.zeros(self.num_envs, np.int64)
        self._autoreset = np.zeros(self.num_envs, bool)

    def reset(self, *, seed=None, options=None):
        if seed is None:
            seeds = [None] * self.num_envs
        elif isinstance(seed, (int, np.integer)):
            seeds = [int(seed) + i for i in range(self.num_envs)]
        else:
            seeds = list(seed)
            if len(seeds) != self.num_envs:
                raise InputError(f"reset: {len(seeds)} seeds for {self.num_envs} environments")
        for i, s in enumerate(seeds):
            if s is not None or self._rngs[i] is None:
                self._rngs[i], _ = seeding.np_random(s)
            self.core.reset_row(i, self._rngs[i])
        self._elapsed[:] = 0
        self._autoreset[:] = False
        return self.core.observe(), {}

    def step(self, actions):
        core = self.core
        again = np.flatnonzero(self._autoreset)
        core.q[again], core.v[again] = core.q0, core.v0  # ended rows: stepped from a sane state, then reset
        obs, rew, term, info = core.transition(actions)
        self._elapsed += 1
        trunc = (
            (self._elapsed >= self.max_episode_steps)
            if self.max_episode_steps is not None
            else np.zeros(self.num_envs, bool)
        )
        if again.size:  # the rows whose episode ended last step start anew (they were stepped for nothing)
            for i in again:
                core.reset_row(int(i), self._rngs[int(i)])
            obs[again] = core.observe()[again]
            rew[again], term[again], trunc[again] = 0.0, False, False
            self._elapsed[again] = 0
            for k in info:
                info[k] = np.array(info[k])
                info[k][again] = 0
        self._autoreset = term | trunc
        return obs, rew, term, trunc, info
