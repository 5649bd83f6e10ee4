"""The ready tasks: ``pbsim/Swimmer-v0``, ``pbsim/Spider-v0``, ``pbsim/Hopper-v0``,
``pbsim/Walker2d-v0``, ``pbsim/Humanoid-v0``.  Each is a function of the environment's keyword
arguments returning the arguments of :class:`~pbsim.envs.core.RobotEnv` (:data:`TASKS`);
:func:`pbsim.envs.make_env` / :func:`pbsim.envs.make_vec_env` are the gymnasium entry points.  ``integrator``, ``dt`` and
``frame_skip`` are arguments of every task (train with one integrator, evaluate with another).

Hopper, Walker2d and Humanoid load gymnasium's own MJCF files (from the installed gymnasium) and
use gymnasium's v5 definitions of reward, termination and observation (where MuJoCo-only
quantities are not available, the observation is ``[qpos[2:], qvel]``).  Swimmer and Spider are
paper 000's creatures (``pbsim_models``): the swimmer with the anisotropic drag of 000 Sec. 6.2
and stable-PD joint targets (a PBAD step, since only PBAD models drag), the spider with Eq. 9
penalty contact (PBAD) or any integrator's contact through the scene.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from pbsim.jit import kernel
from pbsim.dynamics.api import forward_kinematics
from pbsim.errors import InputError
from pbsim.io import load

# max_episode_steps of each registered id
EPISODE_STEPS = {"Swimmer": 400, "Spider": 200, "Hopper": 1000, "Walker2d": 1000, "Humanoid": 1000}


def gym_asset(name: str) -> str:
    """Path of one of gymnasium's MuJoCo model files (``hopper.xml`` ...)."""
    import gymnasium

    p = Path(gymnasium.__file__).parent / "envs" / "mujoco" / "assets" / name
    if not p.exists():  # pragma: no cover - a gymnasium without its MuJoCo assets
        raise InputError(f"gymnasium's MuJoCo asset {name} not found at {p}")
    return str(p)


def com_position(model, q) -> np.ndarray:
    """Centre of mass of every row of ``q`` (B, nq): (B, 3)."""
    T = forward_kinematics(model, np.atleast_2d(q))
    c = np.einsum("bnij,nj->bni", T[:, :, :3, :3], model.com) + T[:, :, :3, 3]
    return np.einsum("bni,n->bi", c, model.mass) / model.mass.sum()


# -- gymnasium's hopper / walker2d (v5 definitions) -------------------------------------------
def _walker_obs(model, q, v):
    return np.concatenate([q[:, 1:], np.clip(v, -10.0, 10.0)], axis=1)


def _walker_health(z_range, angle_range, state_range):
    def healthy(q, v):
        z, ang = q[:, 1], q[:, 2]
        ok = (z_range[0] < z) & (z < z_range[1]) & (angle_range[0] < ang) & (ang < angle_range[1])
        if state_range is not None:
            st = np.concatenate([q[:, 2:], v], axis=1)
            ok &= np.all((state_range[0] < st) & (st < state_range[1]), axis=1)
        return ok

    healthy.ranges = (z_range, angle_range, state_range)
    return healthy


def _walker_reward(healthy, forward_weight=1.0, ctrl_weight=1e-3, healthy_reward=1.0):
    def reward(model, q0, v0, q1, v1, action, dt):
        xvel = (q1[:, 0] - q0[:, 0]) / dt
        fwd = forward_weight * xvel
        alive = healthy(q1, v1) * healthy_reward
        ctrl = ctrl_weight * np.sum(np.square(action), axis=1)
        return fwd + alive - ctrl, {
            "x_position": q1[:, 0].copy(),
            "x_velocity": xvel,
            "reward_forward": fwd,
            "reward_ctrl": -ctrl,
            "reward_survive": alive,
        }

    return reward


WALKER_INFO = ("x_position", "x_velocity", "reward_forward", "reward_ctrl", "reward_survive")


@kernel
def walker_task(m, w, prm, qb, vb, q, v, a, dt, obs, out):
    """One row of the 2-D walkers' task (the compiled twin of ``_walker_obs``, ``_walker_health``
    and ``_walker_reward``): ``obs = [q[1:], clip(v, -10, 10)]``, ``out = [reward, terminated, -,
    *WALKER_INFO]``.  ``prm = [z_lo, z_hi, angle_lo, angle_hi, state_check, state_lo, state_hi,
    forward_weight, ctrl_weight, healthy_reward]``."""
    xvel = (q[0] - qb[0]) / dt
    fwd = prm[7] * xvel
    ok = prm[0] < q[1] and q[1] < prm[1] and prm[2] < q[2] and q[2] < prm[3]
    if prm[4] > 0.5:
        for j in range(2, m.nq):
            if not (prm[5] < q[j] and q[j] < prm[6]):
                ok = False
        for j in range(m.nv):
            if not (prm[5] < v[j] and v[j] < prm[6]):
                ok = False
    alive = prm[9] if ok else 0.0
    sq = 0.0
    for k in range(a.shape[0]):
        sq += a[k] * a[k]
    ctrl = prm[8] * sq
    out[0] = fwd + alive - ctrl
    out[1] = 0.0 if ok else 1.0
    out[3] = q[0]
    out[4] = xvel
    out[5] = fwd
    out[6] = -ctrl
    out[7] = alive
    for j in range(1, m.nq):
        obs[j - 1] = q[j]
    for j in range(m.nv):
        obs[m.nq - 1 + j] = min(max(v[j], -10.0), 10.0)


def _walker_task(xml, healthy, integrator, dt, frame_skip, reset_noise_scale, **kw):
    """The task dict of gymnasium's 2-D walkers (its motors through ``Control(ctrl=...)``)."""
    r = healthy.ranges
    prm = [*r[0], *r[1], 0.0 if r[2] is None else 1.0, *(r[2] or (0.0, 0.0)), 1.0, 1e-3, 1.0]
    return dict(
        task_kernel=(walker_task, np.array(prm, np.float64), WALKER_INFO),
        model=load(gym_asset(xml)),
        integrator=integrator,
        dt=dt,
        frame_skip=frame_skip,
        control="ctrl",
        reward=_walker_reward(healthy),
        terminated=lambda m, q, v: ~healthy(q, v),
        observation=_walker_obs,
        reset_noise=reset_noise_scale,
        **kw,
    )


def hopper(integrator="euler", dt=0.002, frame_skip=4, reset_noise_scale=5e-3, **kw):
    """gymnasium's Hopper-v5 (hopper.xml, its 3 motors through ``Control(ctrl=...)``)."""
    healthy = _walker_health((0.7, np.inf), (-0.2, 0.2), (-100.0, 100.0))
    return _walker_task("hopper.xml", healthy, integrator, dt, frame_skip, reset_noise_scale, **kw)


def walker2d(integrator="euler", dt=0.002, frame_skip=4, reset_noise_scale=5e-3, **kw):
    """gymnasium's Walker2d-v5 (walker2d_v5.xml, its 6 motors through ``Control(ctrl=...)``)."""
    healthy = _walker_health((0.8, 2.0), (-1.0, 1.0), None)
    return _walker_task("walker2d_v5.xml", healthy, integrator, dt, frame_skip, reset_noise_scale, **kw)


# -- gymnasium's humanoid with stable-PD joint targets ----------------------------------------
def humanoid(integrator="euler", dt=0.003, frame_skip=5, reset_noise_scale=1e-2, kp_per_gear=4.0, **kw):
    """gymnasium's humanoid.xml; the action (17, in [-1, 1]) sets joint targets over each actuated
    joint's range (``q_ref = mid + a * half-range``), tracked by stable PD (paper 001) with
    ``kp = kp_per_gear * gear``, ``kd = kp / 10``; Humanoid-v5's reward: 1.25 x-velocity of the
    centre of mass + 5 while healthy (root height in (1, 2)) - 0.1 |a|^2."""
    model = load(gym_asset("humanoid.xml"))
    act = model.actuators
    dofs = act.dof
    lo, hi = model.lower[dofs], model.upper[dofs]
    q0 = model.default_configuration()
    joints = [int(np.flatnonzero((model.iv <= d) & (d < model.iv + model.nvj))[0]) for d in dofs]  # each DOF's joint
    qi = np.array([int(model.iq[j]) for j in joints])
    mid = np.where(np.isfinite(lo + hi), 0.5 * (lo + hi), 0.0)
    half = np.where(np.isfinite(hi - lo), 0.5 * (hi - lo), 1.0)
    q0 = q0.copy()
    q0[qi] = mid  # the action's zero: the middle of each joint's range
    kp = kp_per_gear * np.abs(act.gear)

    def healthy(q):
        return (1.0 < q[:, 2]) & (q[:, 2] < 2.0)

    def reward(model, q0_, v0_, q1, v1, action, dt_):
        xvel = (com_position(model, q1)[:, 0] - com_position(model, q0_)[:, 0]) / dt_
        alive = 5.0 * healthy(q1)
        ctrl = 0.1 * np.sum(np.square(action), axis=1)
        return 1.25 * xvel + alive - ctrl, {"x_velocity": xvel, "reward_survive": alive, "reward_ctrl": -ctrl}

    return dict(
        model=model,
        integrator=integrator,
        dt=dt,
        frame_skip=frame_skip,
        control="spd",
        q_nominal=q0,
        reward=reward,
        terminated=lambda m, q, v: ~healthy(q),
        observation=lambda m, q, v: np.concatenate([q[:, 2:], v], axis=1),
        reset_noise=reset_noise_scale,
        actuated=[model.joint_names[j] for j in joints],
        action_scale=half,
        kp=kp,
        kd=kp / 10.0,
        **kw,
    )


# -- paper 000's swimmer and spider -----------------------------------------------------------
SWIMMER_DRAG = dict(drag_n=4.0, drag_t=0.2)  # demo_swimmer.py: normal >> tangential


def swimmer_points(model, link_length=0.25, cn=4.0, ct=0.2) -> dict:
    """PBAD's drag points of the swimmer (4 per link along its axis), ``points`` option."""
    pb, pl = [], []
    for i in range(model.nb):
        for s in (0.125, 0.375, 0.625, 0.875):
            pb.append(i)
            pl.append([s * link_length, 0.0, 0.0])
    return dict(points_body=pb, points_local=pl, points_axis=[[1.0, 0, 0]] * len(pb), drag_n=cn, drag_t=ct)


def swimmer(integrator="pbad", dt=0.05, frame_skip=1, kp=20.0, kd=1.0, reset_noise_scale=0.0, **kw):
    """Paper 000's 4-link swimmer in a fluid (anisotropic drag, PBAD's ``points`` option): the action
    (3, in [-1, 1]) is the joint targets in rad, tracked by stable PD; reward: the x-velocity of the
    centre of mass - 1e-4 |a|^2 (as gymnasium's Swimmer)."""
    import pbsim_models

    model = pbsim_models.swimmer()
    opts = dict(kw.pop("integrator_options", None) or {})
    if integrator.startswith("pbad"):
        opts.setdefault("points", swimmer_points(model))

    def reward(model, q0, v0, q1, v1, action, dt_):
        xvel = (com_position(model, q1)[:, 0] - com_position(model, q0)[:, 0]) / dt_
        ctrl = 1e-4 * np.sum(np.square(action), axis=1)
        return xvel - ctrl, {"x_velocity": xvel, "reward_ctrl": -ctrl}

    return dict(
        model=model,
        integrator=integrator,
        dt=dt,
        frame_skip=frame_skip,
        control="spd",
        kp=kp,
        kd=kd,
        reward=reward,
        observation=lambda m, q, v: np.concatenate([q[:, 3:], v], axis=1),
        reset_noise=reset_noise_scale,
        integrator_options=opts,
        **kw,
    )


SPIDER_D1, SPIDER_D2 = 2e3, 1e8  # demo_spider.py's Eq. 9 penalties


def spider(integrator="pbad", dt=0.05, frame_skip=1, kp=150.0, kd=3.0, reset_noise_scale=0.0, **kw):
    """Paper 000's spider (Fig. 5b) on the ground: the action (12, in [-1, 1]) is joint targets in
    rad about the standing pose, stable PD; reward: torso x-velocity + 0.1 while upright - 1e-3 |a|^2;
    it ends when the torso drops below 0.1 m, rises above 1 m or moves faster than 2 m/s
    (launched or skating: large-dt penalty contact can be exploited) or tilts past 70 deg.  PBAD uses Eq. 9 penalty contact
    on the feet, knees and torso corners (demo_spider.py); the other integrators the same points
    in a :class:`pbsim.Scene` with a ground plane."""
    import pbsim_models
    from pbsim_models.creatures import spider_contact_points, spider_standing

    from pbsim.contact import Scene
    from pbsim.contact.environment import Plane
    from pbsim.contact.points import ContactPoints

    model = pbsim_models.spider()
    pts = spider_contact_points(model)
    opts = dict(kw.pop("integrator_options", None) or {})
    scene = kw.pop("scene", None)
    if scene is None:  # the feet, knees and torso corners against the ground plane
        # PBAD reads Eq. 9's D1 = k / 2 and D2 = mu k / (2 * 0.1 m/s) from the scene
        # (pbsim.contact.energy.energy_parameters): demo_spider.py's D1 = 2e3, D2 = 1e8
        pbad = integrator.startswith("pbad")
        scene = Scene(
            environment=[Plane(np.array([0.0, 0, 1]), 0.0)],
            points=ContactPoints(pts["points_body"], pts["points_local"], pts["points_radius"]),
            stiffness=2 * SPIDER_D1 if pbad else None,
            mu=SPIDER_D2 * 0.2 / (2 * SPIDER_D1) if pbad else 1.0,
        )

    def upright(q):
        x, y = q[:, 4], q[:, 5]  # quaternion (w, x, y, z): the torso's z axis, its world z component
        return 1.0 - 2.0 * (x * x + y * y)

    def reward(model, q0, v0, q1, v1, action, dt_):
        xvel = (q1[:, 0] - q0[:, 0]) / dt_
        ctrl = 1e-3 * np.sum(np.square(action), axis=1)
        alive = 0.1 * (upright(q1) > np.cos(np.deg2rad(70)))
        return xvel + alive - ctrl, {"x_velocity": xvel, "x_position": q1[:, 0].copy(), "reward_ctrl": -ctrl}

    return dict(
        model=model,
        integrator=integrator,
        dt=dt,
        frame_skip=frame_skip,
        control="spd",
        kp=kp,
        kd=kd,
        q0=spider_standing(model),
        scene=scene,
        reward=reward,
        terminated=lambda m, q, v: (
            (q[:, 2] < 0.1)
            | (q[:, 2] > 1.0)
            | (upright(q) < np.cos(np.deg2rad(70)))
            | (np.hypot(v[:, 3], v[:, 4]) > 2.0)
        ),
        observation=lambda m, q, v: np.concatenate([q[:, 2:], v], axis=1),
        reset_noise=reset_noise_scale,
        integrator_options=opts,
        **kw,
    )


TASKS = {"Swimmer": swimmer, "Spider": spider, "Hopper": hopper, "Walker2d": walker2d, "Humanoid": humanoid}
