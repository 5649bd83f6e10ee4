"""A model's fluid medium and its parts (MJCF ``<option density viscosity wind>``): ``Model.fluid``.

MuJoCo's inertia-box model (:mod:`pbsim.dynamics.fluid`) gives each body of the file the box of
the same mass and principal inertia.  pbsim fuses bodies joined by fixed joints, so the boxes are
kept per *part* (one per file body with mass): the pbsim body it moves with, its principal frame
in that body's frame, and the box.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from pbsim.errors import InputError

MINVAL = 1e-15  # MuJoCo's mjMINVAL: lighter bodies and thinner boxes are clamped as MuJoCo does


def inertia_box(mass: float, moments) -> np.ndarray:
    """The sides ``b_i = sqrt(6 (I_j + I_k - I_i) / m)`` of the uniform box of ``mass`` with the
    principal ``moments`` (MuJoCo's inertia-box fluid model)."""
    I = np.asarray(moments, float)
    return np.array([np.sqrt(max(MINVAL, I[(a + 1) % 3] + I[(a + 2) % 3] - I[a]) / mass * 6.0) for a in range(3)])


@dataclass
class Fluid:
    """The medium (``density`` kg/m^3, ``viscosity`` Pa s, ``wind`` m/s in world axes) and ``nf``
    parts: ``body`` (nf,) the pbsim body, ``R`` (nf, 3, 3) / ``p`` (nf, 3) the part's principal
    frame and centre of mass in that body's frame, ``box`` (nf, 3) its sides, ``names`` the file's
    bodies."""

    density: float = 0.0
    viscosity: float = 0.0
    wind: np.ndarray = field(default_factory=lambda: np.zeros(3))
    body: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    R: np.ndarray = field(default_factory=lambda: np.zeros((0, 3, 3)))
    p: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    box: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    names: list = field(default_factory=list)

    def __post_init__(self):
        self.wind = np.ascontiguousarray(self.wind, float).reshape(3)
        nf = len(np.atleast_1d(self.body))
        self.body = np.ascontiguousarray(self.body, np.int64).reshape(nf)
        self.R = np.ascontiguousarray(self.R, float).reshape(nf, 3, 3)
        self.p = np.ascontiguousarray(self.p, float).reshape(nf, 3)
        self.box = np.ascontiguousarray(self.box, float).reshape(nf, 3)
        vals = [self.density, self.viscosity, *self.wind, *self.R.ravel(), *self.p.ravel(), *self.box.ravel()]
        if not np.all(np.isfinite(vals)):
            raise InputError("fluid: density, viscosity, wind and the parts' frames and boxes must be finite")
        if self.density < 0 or self.viscosity < 0:
            raise InputError(f"fluid: density and viscosity must be >= 0, got {self.density}, {self.viscosity}")

    @property
    def nf(self) -> int:
        return len(self.body)

    def kernel_fields(self) -> dict:
        """The KModel fields ``fl_*`` (no parts: a model without fluid forces)."""
        return dict(fl_medium=np.array([self.density, self.viscosity, *self.wind]), fl_body=self.body,
                    fl_R=self.R, fl_p=self.p, fl_box=self.box)

    def describe(self) -> str:
        w = f", wind {np.round(self.wind, 6).tolist()} m/s" if np.any(self.wind) else ""
        return (f"fluid forces (MuJoCo's inertia-box model, explicit): density {self.density:g} kg/m^3, viscosity "
                f"{self.viscosity:g} Pa s{w} on {self.nf} bod{'y' if self.nf == 1 else 'ies'}")
