"""Mapping pbsim states to Pinocchio and MuJoCo (oracles for the dynamics tests)."""

from __future__ import annotations

import numpy as np

import pbsim
from pbsim.dynamics.joints import BALL, FREE


class PinOracle:
    """Pinocchio model of the same URDF, with our q/v mapped by joint name."""

    def __init__(self, model, path):
        import pinocchio as pin

        self.pin = pin
        self.m = model
        self.pm = (
            pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer())
            if model.floating_base
            else pin.buildModelFromUrdf(path)
        )
        self.pd = self.pm.createData()
        self.perm = np.zeros(model.nv, int)
        for i in range(model.nb):
            jv = 0 if model.jtype[i] == FREE else self.pm.joints[self.pm.getJointId(model.joint_names[i])].idx_v
            self.perm[model.iv[i] : model.iv[i] + model.nvj[i]] = jv + np.arange(model.nvj[i])

    def q(self, q):
        m, pm = self.m, self.pm
        qp = np.zeros(pm.nq)
        for i in range(m.nb):
            k = m.iq[i]
            if m.jtype[i] == FREE:
                qp[0:3] = q[k : k + 3]
                qp[3:7] = np.roll(q[k + 3 : k + 7], -1)  # (w,x,y,z) -> (x,y,z,w)
                continue
            j = pm.joints[pm.getJointId(m.joint_names[i])]
            if m.jtype[i] == BALL:
                qp[j.idx_q : j.idx_q + 4] = np.roll(q[k : k + 4], -1)
            elif j.nq == 2:  # continuous joint: (cos, sin)
                qp[j.idx_q : j.idx_q + 2] = np.cos(q[k]), np.sin(q[k])
            else:
                qp[j.idx_q] = q[k]
        return qp

    def vec(self, x):
        out = np.zeros(self.pm.nv)
        out[self.perm] = x
        return out

    def crba(self, q):
        M = self.pin.crba(self.pm, self.pd, self.q(q))
        M = np.triu(M) + np.triu(M, 1).T
        return M[np.ix_(self.perm, self.perm)]

    def rnea(self, q, v, a):
        return self.pin.rnea(self.pm, self.pd, self.q(q), self.vec(v), self.vec(a))[self.perm]

    def aba(self, q, v, tau):
        return self.pin.aba(self.pm, self.pd, self.q(q), self.vec(v), self.vec(tau))[self.perm]

    def frame_poses(self, q):
        pin = self.pin
        pin.framesForwardKinematics(self.pm, self.pd, self.q(q))
        out = {}
        for fid, f in enumerate(self.pm.frames):
            if f.type == pin.FrameType.BODY:
                out[f.name] = self.pd.oMf[fid].homogeneous.copy()
        return out


class MujocoOracle:
    """MuJoCo model of the same MJCF.  Free-joint velocities differ: MuJoCo's linear part is in
    world axes, pbsim's in the body frame (v_pbsim = T v_mujoco)."""

    def __init__(self, model, path):
        import mujoco

        self.mujoco = mujoco
        self.m = model
        self.mj = mujoco.MjModel.from_xml_path(path)
        self.mj.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONSTRAINT
        self.md = mujoco.MjData(self.mj)

    def T(self, q):
        T = np.eye(self.m.nv)
        if self.m.floating_base:
            T[0:3, 0:3] = pbsim.forward_kinematics(self.m, q)[0][:3, :3].T
        return T

    def evaluate(self, q, v, tau):
        """(M, h, qdd, body poses) in pbsim coordinates; qdd includes MuJoCo's passive forces,
        which are returned too so that our ABA can be given the same generalized force."""
        mujoco, md, mj = self.mujoco, self.md, self.mj
        T = self.T(q)
        Ti = np.linalg.inv(T)
        md.qpos[:] = q
        md.qvel[:] = Ti @ v
        md.qfrc_applied[:] = T.T @ tau
        md.ctrl[:] = 0
        mujoco.mj_forward(mj, md)
        M = np.zeros((mj.nv, mj.nv))
        mujoco.mj_fullM(mj, md, M)
        M = Ti.T @ M @ Ti
        h = Ti.T @ md.qfrc_bias
        qdd = md.qacc.copy()
        if self.m.floating_base:  # d/dt of body-frame linear velocity: R^T a_world - w x v_body
            c = np.zeros(self.m.nv)
            c[0:3] = np.cross(v[3:6], v[0:3])
            h = h + M @ c
            qdd[0:3] = T[0:3, 0:3] @ qdd[0:3] - c[0:3]
        passive = Ti.T @ md.qfrc_passive
        poses = {}
        for i in range(1, mj.nbody):
            name = mujoco.mj_id2name(mj, mujoco.mjtObj.mjOBJ_BODY, i) or f"body{i}"
            P = np.eye(4)
            P[:3, :3] = md.xmat[i].reshape(3, 3)
            P[:3, 3] = md.xpos[i]
            poses[name] = P
        return M, h, qdd, passive, poses


def rel_err(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return float(np.abs(a - b).max() / max(1.0, np.abs(b).max()))
