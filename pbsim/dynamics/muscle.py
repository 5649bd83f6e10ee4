"""MuJoCo's muscle (``<muscle>``, gain/bias/dyn type ``muscle``): its force on a tendon.

An actuator of length ``l`` (``gear`` times its tendon's) and velocity ``dl/dt``, with the
parameters ``p`` = [on, range_0, range_1, F0, lmin, lmax, vmax, fpmax, fvmax, lr_0, lr_1] (``F0``
the peak force, ``lr`` the length range; ``Actuators.muscle``).  Normalized, with the optimal
length ``L0 = (lr_1 - lr_0) / (range_1 - range_0)``::

    L = range_0 + (l - lr_0) / L0,   V = (dl/dt) / (L0 vmax)
    force = -F0 (FL(L) FV(V) act + fpmax FP(L))            (MuJoCo's muscle gain and bias)

``FL`` the active force-length curve (two quadratic bumps from ``lmin`` over 1 to ``lmax``),
``FV`` the force-velocity curve (0 at V <= -1, ``fvmax`` at V >= fvmax - 1), ``FP`` the passive
force (quadratic from 1 to ``(1 + lmax) / 2``, linear beyond).  The activation ``act`` follows
MuJoCo's muscle dynamics (:func:`pbsim.control.actuators.act_step`).  Explicit: evaluated at the
step's state.
"""

from pbsim.jit import kernel

MINVAL = 1e-15  # MuJoCo's mjMINVAL
# KControl.ta_ten of a muscle on a hinge/slide joint: JOINT_ROW - i for body i's joint (tendons are >= 0)
JOINT_ROW = -2


@kernel
def muscle_length_curve(L, lmin, lmax):
    """FL: the active force-length curve."""
    if L < lmin or L > lmax:
        return 0.0
    a = 0.5 * (lmin + 1.0)
    b = 0.5 * (1.0 + lmax)
    if L <= a:
        x = (L - lmin) / max(MINVAL, a - lmin)
        return 0.5 * x * x
    if L <= 1.0:
        x = (1.0 - L) / max(MINVAL, 1.0 - a)
        return 1.0 - 0.5 * x * x
    if L <= b:
        x = (L - 1.0) / max(MINVAL, b - 1.0)
        return 1.0 - 0.5 * x * x
    x = (lmax - L) / max(MINVAL, lmax - b)
    return 0.5 * x * x


@kernel
def muscle_force(p, act, l, ld):
    """The muscle's force at activation ``act``, length ``l`` and velocity ``ld`` (module docstring)."""
    L0 = (p[10] - p[9]) / max(MINVAL, p[2] - p[1])
    L = p[1] + (l - p[9]) / max(MINVAL, L0)
    V = ld / max(MINVAL, L0 * p[6])
    FL = muscle_length_curve(L, p[4], p[5])
    y = p[8] - 1.0
    if V <= -1.0:
        FV = 0.0
    elif V <= 0.0:
        FV = (V + 1.0) * (V + 1.0)
    elif V <= y:
        FV = p[8] - (y - V) * (y - V) / max(MINVAL, y)
    else:
        FV = p[8]
    b = 0.5 * (1.0 + p[5])
    if L <= 1.0:
        FP = 0.0
    elif L <= b:
        x = (L - 1.0) / max(MINVAL, b - 1.0)
        FP = 0.5 * x * x
    else:
        FP = 0.5 + (L - b) / max(MINVAL, b - 1.0)
    return -p[3] * (FL * FV * act + p[7] * FP)
