"""Reference motions made by pbsim's own code (paper 001 Sec. 4 tracks mocap clips; we make
periodic ones): sinusoidal joint targets, a snake's travelling-wave slither, a biped gait for the
DeepMimic humanoid and a diagonal-pair walk for Robosimian.  Each returns a
:class:`~pbsim.control.targets.Reference` (kw: kp, kd, mode, solver, root, dt ...)."""
from __future__ import annotations

import numpy as np

from pbsim.control.targets import Reference
from pbsim.dynamics.joints import BALL, FREE, PRISMATIC, REVOLUTE


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
    return np.array([w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2, w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                     w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2, w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2])


def _set_joint(model, q, name, value):
    """Joint ``name`` of q: an angle (hinge/slide), or a rotation vector (ball, composed on the default)."""
    i = model.joint_index(name)
    k = int(model.iq[i])
    if model.jtype[i] in (REVOLUTE, PRISMATIC):
        q[k] += float(value)
    elif model.jtype[i] == BALL:
        q[k:k + 4] = quat_mul(q[k:k + 4], quat_from_rotvec(value))


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


def snake_slither(model, amplitude=0.6, waves=1.5, frequency=1.0, speed=0.15, pitch=0.05, head_yaw=None, **kw) -> Reference:
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
        _root(model, out, q0[0:3] + np.array([speed * t, 0.0, 0.0]),
              [0.0, 0.0, -head_yaw * np.sin(2 * np.pi * frequency * t + 0.5 * np.pi)])
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
