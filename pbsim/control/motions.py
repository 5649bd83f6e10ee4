"""Reference motions made by pbsim's own code (paper 001 Sec. 4 tracks mocap clips; we make
periodic ones): sinusoidal joint targets, a snake's travelling-wave slither, a biped gait for the
DeepMimic humanoid, a jump and walks for Robosimian, a jump and a trot for the generated spider
(``pbsim_models.spider``, our substitute for paper 002's Spider).  Each returns a
:class:`~pbsim.control.targets.Reference` (kw: kp, kd, mode, solver, root, dt ...)."""

from __future__ import annotations

import numpy as np

from pbsim.control.targets import Reference
from pbsim.dynamics.joints import BALL, FREE, PRISMATIC, REVOLUTE
from pbsim.errors import InputError

KP_PER_KG = 30.0  # the documented default SPD gains (the viewer's, ``pbsim rollout --motion``'s):
KD_PER_KG = 1.0  # kp = 30 M N m/rad, kd = M N m s/rad, M the robot's total mass


def default_gains(model) -> tuple[float, float]:
    """(kp, kd) of the documented default SPD tracking: ``30 M``, ``M`` (M the total mass, at least 1 kg)."""
    M = max(float(model.total_mass), 1.0)
    return KP_PER_KG * M, KD_PER_KG * M


def motion_names() -> list[str]:
    """The public motion functions of this module (found, not listed by hand): every function whose
    first parameter is ``model``, whose other parameters all have defaults (``fn(model)`` works) and
    which returns a :class:`Reference`."""
    import inspect

    out = []
    for name, fn in globals().items():
        if name.startswith("_") or not inspect.isfunction(fn) or fn.__module__ != __name__:
            continue
        params = list(inspect.signature(fn).parameters.values())
        if (
            params[:1]
            and params[0].name == "model"
            and fn.__annotations__.get("return") in ("Reference", Reference)
            and all(p.default is not p.empty or p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL) for p in params[1:])
        ):
            out.append(name)
    return sorted(out)


def motion_summary(name: str) -> str:
    """The first clause of motion ``name``'s docstring (up to the first colon or full stop), on one line."""
    import re

    doc = " ".join((globals()[name].__doc__ or "").split())
    return re.split(r"(?<=[a-z)]): |\. | \(", doc, maxsplit=1)[0]


def make_motion(model, name: str, **kw) -> Reference:
    """Motion ``name`` (one of :func:`motion_names`) as an SPD :class:`Reference` with the documented
    default gains (:func:`default_gains`: kp = 30 M, kd = M) unless ``kp``/``kd`` are given; other
    keywords go to the motion (``dt``, ``root``, ``solver``, ... and the motion's own parameters).
    An unknown name is an InputError listing the valid ones."""
    names = motion_names()
    if name not in names:
        raise InputError(f"unknown motion {name!r}; valid motions: {', '.join(names)}")
    kp0, kd0 = default_gains(model)
    kw = dict(kw)
    kw["kp"] = kp0 if kw.get("kp") is None else kw["kp"]
    kw["kd"] = kd0 if kw.get("kd") is None else kw["kd"]
    kw.setdefault("mode", "spd")
    return globals()[name](model, **kw)


def quat_from_rotvec(r) -> np.ndarray:
    """(w, x, y, z) of the rotation by vector r."""
    r = np.asarray(r, dtype=np.float64)
    th = float(np.linalg.norm(r))
    if th < 1e-12:
        return np.array([1.0, 0.5 * r[0], 0.5 * r[1], 0.5 * r[2]]) / np.sqrt(1 + 0.25 * th * th)
    s = np.sin(0.5 * th) / th
    return np.array([np.cos(0.5 * th), s * r[0], s * r[1], s * r[2]])


def quat_mul(a, b) -> np.ndarray:
    w1, x1, y1, z1 = a
    w2, x2, y2, z2 = b
    return np.array(
        [
            w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2,
            w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
            w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
            w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2,
        ]
    )


def _set_joint(model, q, name, value):
    """Joint ``name`` of q: an angle (hinge/slide), or a rotation vector (ball, composed on the default)."""
    i = model.joint_index(name)
    k = int(model.iq[i])
    if model.jtype[i] in (REVOLUTE, PRISMATIC):
        q[k] += float(value)
    elif model.jtype[i] == BALL:
        q[k : k + 4] = quat_mul(q[k : k + 4], quat_from_rotvec(value))


def _root(model, q, pos, rotvec, base_quat=(1.0, 0.0, 0.0, 0.0)):
    if model.nb and model.jtype[0] == FREE:
        q[0:3] = pos
        q[3:7] = quat_mul(np.asarray(base_quat, float), quat_from_rotvec(rotvec))


def sinusoid(model, amplitude=0.3, frequency=1.0, phase_step=0.5, q0=None, **kw) -> Reference:
    """Every hinge/slide DOF k: ``q0 + A sin(2 pi f t + k phase_step)``; ball joints get a rotation
    vector of such sines; a free root holds ``q0``."""
    q0 = model.default_configuration() if q0 is None else np.asarray(q0, float)

    def q(t):
        out = q0.copy()
        for i in range(model.nb):
            jt, j = model.jtype[i], int(model.iv[i])
            ph = [2 * np.pi * frequency * t + (j + a) * phase_step for a in range(3)]
            if jt in (REVOLUTE, PRISMATIC):
                out[model.iq[i]] += amplitude * np.sin(ph[0])
            elif jt == BALL:
                _set_joint(model, out, model.joint_names[i], amplitude * np.sin(ph))
        return out

    return Reference(model, q=q, **kw)


def snake_slither(
    model, amplitude=0.6, waves=1.5, frequency=1.0, speed=0.15, pitch=0.05, head_yaw=None, **kw
) -> Reference:
    """Lateral undulation: the k-th yaw hinge (axis z) follows ``A sin(2 pi (f t - waves k / n))``,
    a wave travelling from head to tail (``waves`` wavelengths along the body), pitch hinges a small
    wave of their own; the head (free root, for "hog") moves forward at ``speed`` and yaws with the
    wave (``head_yaw``: its amplitude in rad, default ``amplitude / 2``)."""
    q0 = model.default_configuration()
    head_yaw = 0.5 * amplitude if head_yaw is None else float(head_yaw)
    yaw = [i for i in range(model.nb) if model.jtype[i] == REVOLUTE and abs(model.axis[i, 2]) > 0.9]
    pit = [i for i in range(model.nb) if model.jtype[i] == REVOLUTE and abs(model.axis[i, 2]) <= 0.9]
    n = max(len(yaw), 1)

    def q(t):
        out = q0.copy()
        for k, i in enumerate(yaw):
            out[model.iq[i]] += amplitude * np.sin(2 * np.pi * (frequency * t - waves * k / n))
        for k, i in enumerate(pit):
            out[model.iq[i]] += pitch * np.sin(2 * np.pi * (frequency * t - waves * k / n) + 0.5 * np.pi)
        _root(
            model,
            out,
            q0[0:3] + np.array([speed * t, 0.0, 0.0]),
            [0.0, 0.0, -head_yaw * np.sin(2 * np.pi * frequency * t + 0.5 * np.pi)],
        )
        return out

    return Reference(model, q=q, **kw)


def humanoid_gait(model, frequency=0.8, stride=0.5, speed=2.0, height=3.65, **kw) -> Reference:
    """A walking gait of our own for the DeepMimic humanoid (y-up file; the root is turned so that
    +y is world up): hips swing about z in antiphase, knees flex in swing, ankles compensate, arms
    counter-swing, the chest twists; the root advances along x at ``speed`` and bobs twice per
    stride."""
    q0 = model.neutral()
    up = quat_from_rotvec([np.pi / 2, 0, 0])  # file y-up -> world z-up

    def q(t):
        out = q0.copy()
        ph = 2 * np.pi * frequency * t
        for side, s in (("right", 1.0), ("left", -1.0)):
            sw = np.sin(ph if s > 0 else ph + np.pi)
            _set_joint(model, out, f"{side}_hip", [0.0, 0.0, stride * sw])
            _set_joint(model, out, f"{side}_knee", -0.6 * max(0.0, np.cos(ph if s > 0 else ph + np.pi)) - 0.1)
            _set_joint(model, out, f"{side}_ankle", [0.0, 0.0, 0.2 * sw])
            _set_joint(model, out, f"{side}_shoulder", [0.0, 0.0, -0.6 * stride * sw])
            _set_joint(model, out, f"{side}_elbow", 0.4 + 0.2 * sw)
        _set_joint(model, out, "chest", [0.0, 0.1 * np.sin(ph), 0.05])
        _set_joint(model, out, "neck", [0.0, -0.1 * np.sin(ph), 0.0])
        _root(model, out, [speed * t, 0.0, height + 0.05 * np.cos(2 * ph)], [0.0, 0.0, 0.0], up)
        return out

    return Reference(model, q=q, **kw)


def robosimian_gait(model, frequency=0.5, amplitude=0.35, speed=0.1, height=0.6, **kw) -> Reference:
    """A diagonal-pair walk of our own for Robosimian: limbs 1 and 3 in phase, 2 and 4 in antiphase;
    per limb joint1 (axis x) lifts, joint2 (axis -y) swings and joint3/5 bend with the stride, from
    a crouched stance; the torso advances along x at ``speed``."""
    q0 = model.neutral()
    stance = {"joint1": 0.0, "joint2": 0.4, "joint3": 0.0, "joint4": 0.8, "joint5": 0.0, "joint6": 0.5}

    def q(t):
        out = q0.copy()
        for limb in range(1, 5):
            side = 1.0 if limb in (1, 4) else -1.0  # front/back mirror (see FK: limbs 1,4 at +x)
            ph = 2 * np.pi * frequency * t + (0.0 if limb in (1, 3) else np.pi)
            for jn, a0 in stance.items():
                name = f"limb{limb}_{jn}"
                if name not in model.joint_names:
                    continue
                val = a0
                if jn == "joint2":
                    val += amplitude * np.sin(ph)
                elif jn == "joint4":
                    val += 0.5 * amplitude * max(0.0, np.cos(ph))
                elif jn == "joint0":
                    val = side * 0.2 * amplitude * np.sin(ph)
                if jn in ("joint2", "joint4", "joint6"):
                    val *= 1.0 if limb in (2, 4) else -1.0  # limbs 1 and 3 are mirrored: same sign lifts them
                _set_joint(model, out, name, val)
        _root(model, out, [speed * t, 0.0, height], [0.0, 0.0, 0.0])
        return out

    return Reference(model, q=q, **kw)


def dog_trot(model, frequency=1.5, stride=0.35, speed=0.8, **kw) -> Reference:
    """A trot of our own for ``pbsim_models.dog`` (72 DOF): diagonal pairs (right front + left hind,
    left front + right hind) swing in antiphase about y, elbows/knees flex in swing, wrists/ankles
    and toes compensate, the spine bends laterally with the stride, the head nods, the tail wags;
    the pelvis (free root, for "hog") advances along x at ``speed`` and bobs twice per stride."""
    q0 = model.default_configuration()

    def q(t):
        out = q0.copy()
        ph = 2 * np.pi * frequency * t
        for leg, off in (("right_front", 0.0), ("left_hind", 0.0), ("left_front", np.pi), ("right_hind", np.pi)):
            s, c = np.sin(ph + off), np.cos(ph + off)
            front = leg.endswith("front")
            j = ("shoulder", "elbow", "wrist") if front else ("hip", "knee", "ankle")
            flex = 0.8 * max(0.0, c)  # swing phase: fold the leg
            _set_joint(model, out, f"{leg}_{j[0]}", [0.0, -stride * s, 0.0])
            _set_joint(model, out, f"{leg}_{j[1]}", [0.0, (flex + 0.1) * (1.0 if front else -1.0), 0.0])
            _set_joint(model, out, f"{leg}_{j[2]}", [0.0, 0.5 * flex * (-1.0 if front else 1.0), 0.0])
            _set_joint(model, out, f"{leg}_toe", 0.3 * flex)
        for k, n in enumerate(("spine1_joint", "spine2_joint", "chest_joint")):
            _set_joint(model, out, n, [0.03 * np.sin(ph), 0.02 * np.cos(2 * ph), 0.06 * np.sin(ph - 0.5 * k)])
        _set_joint(model, out, "neck_joint", [0.0, -0.1 * np.cos(2 * ph), 0.0])
        _set_joint(model, out, "head_joint", [0.0, 0.1 * np.cos(2 * ph), 0.0])
        _set_joint(model, out, "jaw_joint", 0.1 + 0.1 * np.sin(ph))
        for k in range(3):
            _set_joint(model, out, f"tail{k}_joint", [0.0, -0.1, 0.25 * np.sin(ph - 0.6 * k)])
        _set_joint(model, out, "tail3_joint", 0.3 * np.sin(ph - 1.8))
        _root(model, out, q0[0:3] + np.array([speed * t, 0.0, 0.02 * np.cos(2 * ph)]), [0.0, 0.0, 0.0])
        return out

    return Reference(model, q=q, **kw)


# ---------------------------------------------------------------- Robosimian: jump (paper 002 Fig. 3/4)
ROBOSIMIAN_STANCE = {"joint2": 0.4, "joint4": 0.8, "joint6": 0.5}  # pbsim_models.poses' standing crouch


def _robosimian_sign(limb: int) -> float:
    """Limbs 1 and 3 are mounted turned by 180 degrees: their pitch joints take the opposite sign."""
    return 1.0 if limb in (2, 4) else -1.0


def _robosimian_check(model):
    need = [f"limb{k}_joint{j}" for k in range(1, 5) for j in (2, 4, 6)]
    missing = [n for n in need if n not in model.joint_names]
    if missing:
        raise InputError(f"not a Robosimian (joints limb1..4_joint2/4/6 expected); missing {missing[:4]}")


def _robosimian_stance_q(model) -> np.ndarray:
    q = np.array(model.default_configuration(), dtype=np.float64)
    for limb in range(1, 5):
        for jn, a in ROBOSIMIAN_STANCE.items():
            q[int(model.iq[model.joint_index(f"limb{limb}_{jn}")])] = _robosimian_sign(limb) * a
    return q


def robosimian_crouch_table(model, dz) -> np.ndarray:
    """(len(dz), 3) pitch angles (joint2, joint4, joint6) of limb 4 that put its foot (``limb4_link7``'s
    origin) ``dz`` metres higher in the torso frame than in the standing pose (dz > 0: crouch, the
    torso lower over a fixed foot; dz < 0: the leg extended), the foot kept flat (joint2 + joint4 +
    joint6 constant) and over the same ground point: damped Gauss-Newton by continuation from the
    stance.  The other limbs take the same angles with their sign (limbs 1 and 3 negated)."""
    from pbsim.dynamics.api import forward_kinematics, point_jacobian

    _robosimian_check(model)
    q = _robosimian_stance_q(model)
    if model.nb and model.jtype[0] == FREE:
        q[0:3], q[3:7] = 0.0, (1.0, 0.0, 0.0, 0.0)
    b = model.body_names.index("limb4_link7")
    iq = [int(model.iq[model.joint_index(f"limb4_joint{j}")]) for j in (2, 4, 6)]
    iv = [int(model.iv[model.joint_index(f"limb4_joint{j}")]) for j in (2, 4, 6)]
    p0 = forward_kinematics(model, q)[b, :3, 3].copy()
    total = sum(ROBOSIMIAN_STANCE.values())
    dz = np.asarray(dz, dtype=np.float64)
    out = np.zeros((len(dz), 3))
    idx_up = [i for i in np.argsort(dz) if dz[i] >= 0]  # outward from the stance, each solve from the last
    idx_dn = [i for i in np.argsort(-dz) if dz[i] < 0]
    for idx in (idx_up, idx_dn):
        qq = q.copy()
        for i in idx:
            tgt = p0 + np.array([0.0, 0.0, dz[i]])
            for _ in range(100):
                e = tgt - forward_kinematics(model, qq)[b, :3, 3]
                A = np.vstack([point_jacobian(model, qq, b)[3:, iv], np.ones((1, 3))])
                r = np.concatenate([e, [total - qq[iq].sum()]])
                step = np.linalg.solve(A.T @ A + 1e-6 * np.eye(3), A.T @ r)
                qq[iq] += step
                if np.abs(step).max() < 1e-12:
                    break
            err = float(np.linalg.norm(tgt - forward_kinematics(model, qq)[b, :3, 3]))
            if err > 1e-6:
                raise InputError(
                    f"robosimian crouch dz = {dz[i]:+.3f} m is out of the leg's reach (foot error {err:.3g} m)"
                )
            out[i] = qq[iq]
    return out


def _smooth(s):
    """0 -> 1 with zero slope at both ends (cubic smoothstep), s clipped to [0, 1]."""
    s = min(max(s, 0.0), 1.0)
    return s * s * (3.0 - 2.0 * s)


def jump_profile(t, period=2.0, crouch=0.2, extend=0.06, t_crouch=0.8, t_push=0.15, t_tuck=0.35) -> float:
    """Foot height over the torso relative to the stance (m; > 0 crouched) at time t of the jump
    cycle: crouch smoothly to ``crouch`` over ``t_crouch`` s, push off to ``-extend`` over
    ``t_push`` s (an ease-in, 1 - cos: the legs are fastest at the end of the stroke, where the
    feet leave the ground), fold back to the stance over ``t_tuck`` s (in the air), hold until the
    period ends (landing)."""
    u = float(t) % period
    if u < t_crouch:
        return crouch * _smooth(u / t_crouch)
    u -= t_crouch
    if u < t_push:
        return crouch - (crouch + extend) * (1.0 - np.cos(0.5 * np.pi * u / t_push))
    u -= t_push
    if u < t_tuck:
        return -extend * (1.0 - _smooth(u / t_tuck))
    return 0.0


def robosimian_jump(
    model, period=2.0, crouch=0.2, extend=0.06, t_crouch=0.8, t_push=0.15, t_tuck=0.35, height=None, **kw
) -> Reference:
    """A mirror-symmetric jump of our own for Robosimian (paper 002 Fig. 3/4: 5 jumps in 10 s at the
    default ``period`` of 2 s): all four legs crouch and extend together, keeping each foot flat and
    over its ground point (:func:`robosimian_crouch_table`, limb 4's IK; the other limbs take the same
    angles with their sign, so the reference is exactly symmetric front-back and left-right in joint
    space), on the cycle of :func:`jump_profile`; the other joints hold the standing pose.  The free
    root's target (used only with ``root="hog"``) is the torso over the feet at ``height`` (default:
    the stance's foot depth) minus the crouch.  Track it with SPD, e.g. ``kp = 30 M``, ``kd = M``
    (:func:`default_gains`)."""
    _robosimian_check(model)
    q0 = _robosimian_stance_q(model)
    grid = np.linspace(-extend, crouch, max(8, int(np.ceil((crouch + extend) / 0.005)) + 1))
    table = robosimian_crouch_table(model, grid)
    iq = {limb: [int(model.iq[model.joint_index(f"limb{limb}_joint{j}")]) for j in (2, 4, 6)] for limb in range(1, 5)}
    if height is None:
        from pbsim.dynamics.api import forward_kinematics

        qb = q0.copy()
        if model.nb and model.jtype[0] == FREE:
            qb[0:3], qb[3:7] = 0.0, (1.0, 0.0, 0.0, 0.0)
        height = -float(forward_kinematics(model, qb)[model.body_names.index("limb4_link7"), 2, 3])
    prof = dict(period=period, crouch=crouch, extend=extend, t_crouch=t_crouch, t_push=t_push, t_tuck=t_tuck)

    def q(t):
        out = q0.copy()
        dz = jump_profile(t, **prof)
        ang = np.array([np.interp(dz, grid, table[:, k]) for k in range(3)])
        for limb in range(1, 5):
            out[iq[limb]] = _robosimian_sign(limb) * ang
        _root(model, out, [0.0, 0.0, height - dz], [0.0, 0.0, 0.0])
        return out

    return Reference(model, q=q, **kw)


# ---------------------------------------------------------------- Robosimian: walk (paper 002 Fig. 5)
CRAWL = {3: 0.0, 4: 0.25, 2: 0.5, 1: 0.75}  # swing order LH (limb 3), LF (4), RH (2), RF (1)
TROT = {1: 0.0, 3: 0.0, 2: 0.5, 4: 0.5}  # diagonal pairs


def walk_foot_offsets(tau, duty=0.75, stride=0.2, lift=0.1, sway=0.08, phases=None) -> np.ndarray:
    """(4, 3) foot displacements from the standing foot positions in the torso frame at gait phase
    ``tau`` (0..1): in stance (a fraction ``duty`` of the cycle) a foot moves back by ``stride`` at
    constant speed, in swing it returns forward along a half cosine and rises by ``lift``; all feet
    shift by ``sway cos(2 pi tau)`` along y (the body leans away from the swinging side)."""
    phases = CRAWL if phases is None else phases
    out = np.zeros((4, 3))
    dy = sway * np.cos(2 * np.pi * tau)
    for limb in range(1, 5):
        ph = (tau - phases[limb]) % 1.0
        if ph < duty:
            out[limb - 1] = [stride * (0.5 - ph / duty), dy, 0.0]
        else:
            s = (ph - duty) / (1.0 - duty)
            out[limb - 1] = [-0.5 * stride * np.cos(np.pi * s), dy, lift * np.sin(np.pi * s)]
    return out


def _limb_dofs(model, limb):
    names = [n for n in model.joint_names if n.startswith(f"limb{limb}_")]
    return (np.array([int(model.iq[model.joint_index(n)]) for n in names]),
            np.array([int(model.iv[model.joint_index(n)]) for n in names]))  # fmt: skip


GAITS = {"trot": dict(period=1.0, duty=0.5, sway=0.0), "crawl": dict(period=2.0, duty=0.75, sway=0.08)}


def robosimian_walk(
    model, gait="trot", period=None, duty=None, stride=0.2, lift=0.1, sway=None, blend=1.0, samples=80, **kw
) -> Reference:
    """A walk of our own for Robosimian: foot trajectories (:func:`walk_foot_offsets`) turned into
    joint targets by damped least-squares IK per limb (every hinge of the limb, regularised toward
    the standing pose), tabulated at ``samples`` phases and interpolated; blended in from the
    standing pose over the first ``blend`` seconds.  ``gait`` "trot" (default: diagonal pairs,
    ``period`` 1 s, ``duty`` 0.5, no sway) or "crawl" (one leg at a time in the order LH, LF, RH,
    RF, statically stable: ``period`` 2 s, ``duty`` 0.75, ``sway`` 0.08 m); None takes the gait's
    value.  The feet push back by ``stride`` per stance, so the commanded speed is ``stride / (duty
    period)`` along +x (0.4 m/s for the trot; tracked with slip: pbfd at 20 ms, kp = 30 M, walks
    0.28 m/s).  The free root's target (for ``root="hog"``) advances at that speed."""
    from pbsim.dynamics.api import forward_kinematics, point_jacobian

    _robosimian_check(model)
    if gait not in GAITS:
        raise InputError(f"gait must be one of {sorted(GAITS)}, got {gait!r}")
    phases = CRAWL if gait == "crawl" else TROT
    period = GAITS[gait]["period"] if period is None else float(period)
    duty = GAITS[gait]["duty"] if duty is None else float(duty)
    sway = GAITS[gait]["sway"] if sway is None else float(sway)
    q0 = _robosimian_stance_q(model)
    qb = q0.copy()
    if model.nb and model.jtype[0] == FREE:
        qb[0:3], qb[3:7] = 0.0, (1.0, 0.0, 0.0, 0.0)
    feet = [model.body_names.index(f"limb{k}_link7") for k in range(1, 5)]
    dofs = [_limb_dofs(model, k) for k in range(1, 5)]
    T0 = forward_kinematics(model, qb)
    feet0 = np.array([T0[b, :3, 3] for b in feet])
    height = -float(feet0[:, 2].mean())
    table, q = [], qb.copy()
    for tau in np.arange(samples) / samples:
        tgt = feet0 + walk_foot_offsets(tau, duty, stride, lift, sway, phases)
        for k, b in enumerate(feet):
            iq, iv = dofs[k]
            for _ in range(50):
                e = tgt[k] - forward_kinematics(model, q)[b, :3, 3]
                J = point_jacobian(model, q, b)[3:, iv]
                dq = np.linalg.solve(J.T @ J + 2e-2 * np.eye(len(iv)), J.T @ e - 1e-2 * (q[iq] - qb[iq]))
                q[iq] += dq
                if np.abs(dq).max() < 1e-10:
                    break
        table.append(q.copy())
    table = np.array(table)
    joints = np.concatenate([d[0] for d in dofs])
    speed = stride / (duty * period)

    def qf(t):
        out = q0.copy()
        t = max(float(t), 0.0)
        x = samples * ((t / period) % 1.0)
        i0 = int(x) % samples
        f = x - int(x)
        g = (1 - f) * table[i0] + f * table[(i0 + 1) % samples]
        w = _smooth(t / blend) if blend > 0 else 1.0
        out[joints] = (1 - w) * q0[joints] + w * g[joints]
        _root(model, out, [speed * t, 0.0, height], [0.0, 0.0, 0.0])
        return out

    return Reference(model, q=qf, **kw)


# ---------------------------------------------------------------- spider: jump and trot (paper 002 Table I's Spider)
# pbsim_models.spider (paper 000's spider): free torso, per leg k (0: +x+y, 1: -x+y, 2: -x-y, 3: +x-y)
# the hinges hip{k}_0 (pitch, about the leg's horizontal normal: > 0 lowers the thigh), hip{k}_1 (yaw,
# about the pitched frame's z) and knee{k} (about the normal: > 0 turns the shin inward, under the hip).


def _spider_check(model):
    names = [f"hip{k}_{i}" for k in range(4) for i in (0, 1)] + [f"knee{k}" for k in range(4)]
    missing = [n for n in names if n not in model.joint_names] + [
        f"shin{k}" for k in range(4) if f"shin{k}" not in model.body_names
    ]
    if missing:
        raise InputError(
            f"not a pbsim_models.spider (joints hip0..3_0/1, knee0..3, bodies shin0..3 expected); missing {missing[:4]}"
        )


def spider_leg_geometry(model) -> dict:
    """The spider's leg in its vertical plane at the neutral pose (root at the origin): thigh length
    ``L1``, shin length ``L2`` (knee to the foot point, the shin capsule's tip), the shin's angle below
    the horizontal ``phi0`` (the thigh's is 0), the foot's horizontal reach ``r0`` from the hip and depth
    ``z0`` (< 0) below it, and the foot sphere's radius (the shin capsule's)."""
    from pbsim.dynamics.api import forward_kinematics

    _spider_check(model)
    q = np.array(model.neutral(), dtype=np.float64)
    if model.nb and model.jtype[0] == FREE:
        q[0:3], q[3:7] = 0.0, (1.0, 0.0, 0.0, 0.0)
    T = forward_kinematics(model, q)
    g = next(g for g in model.geoms if g.name in ("shin0_collision", "shin0_visual"))
    hip = T[model.body_names.index("thigh0"), :3, 3]
    knee = T[model.body_names.index("shin0"), :3, 3]
    Ts = T[model.body_names.index("shin0")]
    foot = Ts[:3, :3] @ (2.0 * np.asarray(g.p, float)) + Ts[:3, 3]
    d = (knee - hip) * np.array([1.0, 1.0, 0.0])
    d /= np.linalg.norm(d)
    r = lambda p: float((p - hip) @ d)  # noqa: E731
    return dict(L1=float(np.linalg.norm(knee - hip)), L2=float(np.linalg.norm(foot - knee)),
                phi0=float(np.arctan2(-(foot - knee)[2], r(foot) - r(knee))), r0=r(foot), z0=float(foot[2] - hip[2]),
                radius=float(g.size[0]))  # fmt: skip


def spider_leg_ik(geom, dz, dr=0.0) -> np.ndarray:
    """(len(dz), 2) (pitch, knee) angles of a spider leg that put its foot ``dz`` higher (``dz`` > 0:
    the torso lower over a fixed foot) and ``dr`` farther out from the hip than in the neutral pose,
    in the leg's vertical plane (closed-form two-link IK, the knee-up branch of the stance)."""
    L1, L2, phi0 = geom["L1"], geom["L2"], geom["phi0"]
    dz = np.atleast_1d(np.asarray(dz, dtype=np.float64))
    r = geom["r0"] + np.broadcast_to(np.asarray(dr, dtype=np.float64), dz.shape)
    z = geom["z0"] + dz
    D2 = r * r + z * z
    c = (D2 - L1 * L1 - L2 * L2) / (2 * L1 * L2)
    if np.any(np.abs(c) > 1.0):
        raise InputError(f"spider foot target out of the leg's reach (dz {dz[np.argmax(np.abs(c))]:+.3f} m)")
    psi = np.arccos(c)  # the shin's angle to the thigh (phi0 at the stance)
    pitch = np.arctan2(-z, r) - np.arctan2(L2 * np.sin(psi), L1 + L2 * np.cos(psi))
    return np.stack([pitch, psi - phi0], axis=-1)


def _spider_dofs(model):
    return {k: [int(model.iq[model.joint_index(n)]) for n in (f"hip{k}_0", f"hip{k}_1", f"knee{k}")] for k in range(4)}


def _spider_stance(model, geom) -> np.ndarray:
    """The neutral pose (legs spread, thighs level) with the feet on the plane z = 0 (as
    ``pbsim_models.creatures.spider_standing``)."""
    q = np.array(model.neutral(), dtype=np.float64)
    if model.nb and model.jtype[0] == FREE:
        q[0:3], q[3:7] = (0.0, 0.0, geom["radius"] - geom["z0"]), (1.0, 0.0, 0.0, 0.0)
    return q


def spider_jump(model, period=2.0, crouch=0.1, extend=0.04, t_crouch=0.8, t_push=0.1, t_tuck=0.3, **kw) -> Reference:
    """A symmetric jump of our own for ``pbsim_models.spider`` (paper 002's Spider is not described;
    this is our substitute; 5 jumps in 10 s at the default ``period`` of 2 s): all four legs crouch
    and extend together on the cycle of :func:`jump_profile` (crouch ``crouch`` m over ``t_crouch``
    s, push to ``extend`` m beyond the stance in ``t_push`` s, fold back in the air), each foot kept
    over its ground point by the leg's two-link IK (:func:`spider_leg_ik`: pitch and knee; yaw 0).
    Every leg takes the same angles, so the reference is exactly symmetric under the spider's
    quarter turn and both mirror planes.  The free root's target (``root="hog"``) is the torso over
    the feet minus the crouch.  Track it with SPD, e.g. ``kp = 30 M``, ``kd = 0.3 M`` (measured on a
    plane, mu 0.8, passive root: pbfd at dt 5 ms lifts the torso 0.17 m, the feet 0.16 m clear of
    the ground; nmdp at 5 ms 0.08 m, feet 0.065 m clear; with the default ``kd = M`` 0.05 m, 0.02 m)."""
    geom = spider_leg_geometry(model)
    q0 = _spider_stance(model, geom)
    grid = np.linspace(-extend, crouch, max(8, int(np.ceil((crouch + extend) / 0.002)) + 1))
    table = spider_leg_ik(geom, grid)
    dofs = _spider_dofs(model)
    prof = dict(period=period, crouch=crouch, extend=extend, t_crouch=t_crouch, t_push=t_push, t_tuck=t_tuck)
    h0 = float(q0[2])

    def q(t):
        out = q0.copy()
        dz = jump_profile(t, **prof)
        a, k = np.interp(dz, grid, table[:, 0]), np.interp(dz, grid, table[:, 1])
        for leg in range(4):
            out[dofs[leg][0]], out[dofs[leg][2]] = a, k
        _root(model, out, [0.0, 0.0, h0 - dz], [0.0, 0.0, 0.0])
        return out

    return Reference(model, q=q, **kw)


def spider_walk(model, period=1.0, sweep=0.3, lift=0.06, blend=1.0, **kw) -> Reference:
    """A trot of our own for ``pbsim_models.spider`` (our substitute for paper 002's Spider): the
    diagonal pairs (legs 0 +x+y and 2 -x-y; legs 1 and 3) half a ``period`` apart; per leg the hip
    yaw follows ``sweep cos(phase)`` (left legs about +z, right legs about -z: the feet move back
    along -x in stance, pushing the torso to +x), and while ``sin(phase) > 0`` (swing) the foot
    rises by ``lift sin(phase)`` m over the hip by the leg's IK (:func:`spider_leg_ik`); amplitudes
    blend in over the first ``blend`` seconds.  Commanded speed: the stance feet's sweep along x per
    half period (0.35 m/s at the defaults; tracked with slip: kp = 30 M, kd = 0.3 M, passive root,
    plane mu 0.8: nmdp at 5 ms walks 0.79 m in 4 s, pbfd 0.41 m).  The free root's target
    (``root="hog"``) advances at it."""
    geom = spider_leg_geometry(model)
    q0 = _spider_stance(model, geom)
    dofs = _spider_dofs(model)
    grid = np.linspace(0.0, lift, 41) if lift > 0 else np.zeros(2)
    table = spider_leg_ik(geom, grid)
    # a foot at reach r0 turned about its hip's vertical axis (legs at 45, 135, ... deg) moves along x by
    # 2 r0 sin(45 deg) sin(sweep) over one stance
    speed = 2.0 * geom["r0"] * np.sin(0.25 * np.pi) * np.sin(sweep) / (0.5 * period)
    h0 = float(q0[2])

    def q(t):
        out = q0.copy()
        t = max(float(t), 0.0)
        w = _smooth(t / blend) if blend > 0 else 1.0
        for leg in range(4):
            ph = 2.0 * np.pi * t / period + (0.0 if leg in (0, 2) else np.pi)
            up = w * lift * max(0.0, np.sin(ph))
            a, k = (np.interp(up, grid, table[:, c]) for c in (0, 1))
            out[dofs[leg][0]], out[dofs[leg][2]] = a, k
            out[dofs[leg][1]] = w * (1.0 if leg in (0, 1) else -1.0) * sweep * np.cos(ph)
        _root(model, out, [speed * t, 0.0, h0], [0.0, 0.0, 0.0])
        return out

    return Reference(model, q=q, **kw)
