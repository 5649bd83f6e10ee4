"""A viewer session that tracks a reference motion (``pbsim view MODEL --motion robosimian_jump``).

:class:`MotionSession` is a :class:`~pbsim_viewer.session.Session` whose SPD control comes from a
:class:`pbsim.control.targets.Reference` (made by :func:`pbsim.control.motions.make_motion`, with
its own gains) instead of the sliders' fixed targets; the tracking error is measured against the
motion's target at the current time.  No GL here.
"""

from __future__ import annotations

import numpy as np

from pbsim_viewer.session import Session


class MotionSession(Session):
    def __init__(self, model, motion, **kw):
        self.motion = motion  # set first: Session.__init__ calls reset(), which reads q_ref
        super().__init__(model, **kw)

    @property
    def q_ref(self):
        """The motion's target configuration at the session's time."""
        return self.motion.q_at(self.time) if hasattr(self, "state") else self.motion.q_at(0.0)

    def control(self):
        if self.drive_actuators and self.model.nu:
            return super().control()
        self.motion.dt = self.dt  # SPD samples the target at the end of the step
        c = self.motion.control(self.time)
        push = self.perturb_torque()  # a ctrl-drag adds its J^T f, as in the plain session
        if push is not None:
            c.tau = push if c.tau is None else np.asarray(c.tau, float) + push
        return c
