"""A session's keyframes: its state and settings saved to and restored from .npz, and the file's own keyframes."""

from __future__ import annotations

import numpy as np

import pbsim


class SessionKeyframes:
    """Keyframe save / load (a mixin of :class:`~pbsim_viewer.session.Session`)."""

    def save_keyframe(self, path) -> str:
        """Write the state (q, v, t), joint targets, gains, actuator inputs, dt and integrator to
        ``path`` (.npz); :meth:`load_keyframe` restores them exactly."""
        import os

        path = os.fspath(path)
        if not path.endswith(".npz"):
            path += ".npz"
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        np.savez(
            path,
            model=np.array(self.model.name),
            nq=np.array(self.model.nq),
            nv=np.array(self.model.nv),
            q=self.state.q[0],
            v=self.state.v[0],
            t=np.array(self.state.t),
            target=self.target,
            kp=self.kp,
            kd=self.kd,
            ctrl=self.ctrl,
            dt=np.array(self.dt),
            integrator=np.array(self.integrator_name),
        )
        return path

    def load_model_keyframe(self, name: str) -> None:
        """Jump to the file's keyframe ``name`` (``Model.keyframes``, MJCF ``<key>``): its q and v; the
        actuator inputs it sets (when the model has actuators)."""
        from pbsim.model.keyframes import keyframe

        key = keyframe(self.model, name)
        self._leave_scrub()
        self.state = pbsim.State.make(self.model, q=key.q, v=key.v, t=float(self.state.t))
        if self.model.nu:
            self.ctrl = np.where(np.isfinite(key.ctrl), key.ctrl, self.ctrl)
        self._edited()

    def load_keyframe(self, path) -> None:
        """Restore a keyframe written by :meth:`save_keyframe` (the same model: nq and nv must
        match); pauses.  Raises :class:`pbsim.InputError` for a file of another model."""
        with np.load(path) as z:
            d = {k: z[k] for k in z.files}
        if int(d["nq"]) != self.model.nq or int(d["nv"]) != self.model.nv:
            raise pbsim.InputError(
                f"keyframe {path}: model {str(d['model'])!r} has nq {int(d['nq'])}, nv {int(d['nv'])}; "
                f"this model ({self.model.name!r}) has nq {self.model.nq}, nv {self.model.nv}"
            )
        self.pause()
        self.target[:] = d["target"]
        self.kp[:] = d["kp"]
        self.kd[:] = d["kd"]
        if len(d["ctrl"]) == len(self.ctrl):
            self.ctrl[:] = d["ctrl"]
        self._q_ref = None
        self.dt = float(d["dt"])
        name = str(d["integrator"])
        if name in self.integrators and name != self.integrator_name:
            self.set_integrator(name)
        self.state = pbsim.State.make(self.model, q=d["q"], v=d["v"], t=float(d["t"]))
        self._edited()
