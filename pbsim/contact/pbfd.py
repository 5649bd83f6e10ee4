"""PBFD's contact model (paper 003, Eq. 8-13): the normal energy ``C_perp P_perp`` and the
non-integrable friction force ``f_par`` of position-based frictional dynamics, per contact point,
on the contact layer's one detection (:func:`pbsim.contact.query.contact_detect`, every
environment shape).  A sibling of :mod:`.penalty` (the explicit integrators' forces) and
:mod:`.energy` (PBAD's Eq. 9 energy).

Per contact point at world position ``x`` (the point's centre on its body at the unknown pose),
which was at ``x_k`` at the start of the step, with signed depth ``sd = r - phi(x)``, depth
``d = max(0, sd)`` and normal ``n = grad phi(x)``:

    normal   (Eq. 8-9)   P_perp = d^(alpha+1) / (alpha+1),  f_perp = C_perp d^alpha n
    friction (Eq. 12)    f_par  = -(beta+1) |u|^beta d^(gamma+1) u,   u = T (x - x_k)

with ``T = I - n_k n_k^T`` the tangent projector at the start of the step (``n_k``: the
detection's normal at ``x_k``, frozen over the step; the note's recommendation for terrain:
then ``T`` is a constant of the step and the derivatives below are exact).  The point's term of
PBFD's residual (Eq. 13, ``r = grad E - C_par sum_k J_k^T f_par,k``) as a world force gradient:

    F = dP/dx - C_par f_par = -C_perp d^alpha n + C_par (beta+1) |u|^beta d^(gamma+1) u

and its Jacobian ``K = dF/dx`` (3x3, **not symmetric**: friction is not a gradient):

    K = C_perp alpha d^(alpha-1) n n^T
        + C_par (beta+1) [ d^(gamma+1) (|u|^beta T + beta |u|^(beta-2) u u^T)
                           - (gamma+1) d^gamma |u|^beta u n^T ]

using ``dd/dx = -n`` and ``du/dx = T``.  What is *not* differentiated: the normal's own change
``dn/dx`` (the term ``-C_perp d^alpha dn/dx``), i.e. ``K`` is exact where the environment is
locally flat -- planes, box faces, heightfield cells whose surface is planar, flat parts of a mesh
terrain's grid -- and drops the curvature term elsewhere (spheres, capsules, curved heightfield
cells).  With ``beta > 0`` the friction and its Jacobian vanish at ``u = 0`` (the ``u u^T /
|u|`` term is 0/0 there and is set to 0).

**The energy form (paper 003 Eq. 11, the PBD baseline ``pbd_friction``)** is the same point
with friction as an energy, ``C_par P_par``, ``P_par = |u|^(beta+1) d^(gamma+1)``, whose true
gradient (Eq. 12) is the friction plus the spurious normal force ``f* = (gamma+1) |u|^(beta+1)
d^gamma n`` (kept: it is what makes PBD friction fail, Sec. IV-B):

    F = -C_perp d^alpha n + C_par [ (beta+1) |u|^(beta-1) d^(gamma+1) u - (gamma+1) |u|^(beta+1) d^gamma n ]

    K = C_perp alpha d^(alpha-1) n n^T
        + C_par [ (beta+1) d^(gamma+1) (|u|^(beta-1) T + (beta-1) |u|^(beta-3) u u^T)
                  - (beta+1)(gamma+1) |u|^(beta-1) d^gamma (u n^T + n u^T)
                  + gamma (gamma+1) |u|^(beta+1) d^(gamma-1) n n^T ]

(the Hessian, symmetric on planes where ``n = n_k``; indefinite while sliding).  Note the
tangential term: the gradient of ``|u|^(beta+1)`` is ``(beta+1) |u|^(beta-1) u``, one power of
``|u|`` below Eq. 12's ``f_par`` as printed (``(beta+1) |u|^beta u``), which PBFD uses as its
force; the two forms share this kernel (:func:`pbfd_friction`'s ``energy`` flag).

Constants: :func:`normal_scale` (the default ``C_perp``) and :func:`friction_constant` (a
``C_par`` for a Coulomb ``mu``: PBFD friction is a velocity-dependent drag, see its docstring;
``pbsim.friction_for_mu`` is its public form).
"""
import math

import numpy as np

from pbsim.jit import kernel
from pbsim.contact.query import contact_detect
from pbsim.contact.scene import DELTA_REF, N_REF
from pbsim.errors import InputError

V_REF = 0.1  # m/s: the sliding speed at which friction_constant matches a Coulomb mu


def normal_scale(model, delta_ref: float = DELTA_REF, alpha: float = 2.0, n_ref: int = N_REF) -> float:
    """The default ``C_perp = M g / (n_ref delta_ref^alpha)``: ``n_ref`` points (4, the scene's
    convention) carry the robot's weight ``M g`` at depth ``delta_ref`` (the scene's, 5 mm).  With
    ``n`` points sharing the weight at rest the depth is ``delta_ref (n_ref / n)^(1/alpha)``."""
    g = float(np.linalg.norm(model.gravity)) or 9.81
    return max(float(model.total_mass), 1e-6) * g / (n_ref * float(delta_ref) ** float(alpha))


def friction_constant(mu: float, dt: float, c_normal: float, v_ref: float = V_REF, alpha: float = 2.0,
                      beta: float = 1.0, gamma: float = 1.0, depth: float = DELTA_REF, energy: bool = False) -> float:
    """A starting ``C_par`` for a desired Coulomb coefficient ``mu`` at time step ``dt``.

    PBFD friction is not Coulomb friction.  Per point, ``|f_par| / |f_perp| = (C_par / C_perp)
    (beta+1) |u|^(beta+1) d^(gamma+1-alpha)``, and in a step ``u = dt v_t`` (the tangential
    displacement), so the effective friction coefficient is

        mu_eff = (beta+1) (C_par / C_perp) (dt |v_t|)^(beta+1) d^(gamma+1-alpha)

    -- with the defaults alpha = 2, beta = gamma = 1: ``mu_eff = 2 (C_par / C_perp) dt^2 |v_t|^2``,
    independent of the depth: a **velocity-squared drag whose strength scales with dt^2**, with no
    static friction (a body on a slope creeps).  This rule returns the ``C_par`` with
    ``mu_eff = mu`` at the sliding speed ``v_ref`` (default 0.1 m/s) and the depth ``depth`` (only
    used when gamma + 1 != alpha):

        C_par = mu C_perp / ((beta+1) (dt v_ref)^(beta+1) depth^(gamma+1-alpha))

    Faster sliding is braked more (``mu_eff = mu (v/v_ref)^(beta+1)``), slower sliding less; the
    same physics at another ``dt`` needs ``C_par`` scaled by ``dt^-(beta+1)``, which this rule
    does (a fixed ``C_par`` does not).

    ``energy``: the same rule for the energy form (Eq. 11, ``pbd_friction``), whose tangential
    force per point is ``(beta+1) C_par |u|^beta d^(gamma+1)`` (one power of ``|u|`` less):
    ``mu_eff = (beta+1) (C_par / C_perp) (dt |v_t|)^beta d^(gamma+1-alpha)`` (linear in the sliding
    speed with the defaults), hence ``(dt v_ref)^beta`` in the rule (C_par ~ dt^-beta); the
    spurious normal force is not counted."""
    mu, dt, c_normal, v_ref = float(mu), float(dt), float(c_normal), float(v_ref)
    for nm, v in (("mu", mu), ("c_normal", c_normal)):
        if not (math.isfinite(v) and v >= 0.0):
            raise InputError(f"friction_constant: {nm} must be a finite number >= 0, got {v!r}")
    for nm, v in (("dt", dt), ("v_ref", v_ref), ("depth", float(depth)), ("beta", float(beta))):
        if not (math.isfinite(v) and v > 0.0):
            raise InputError(f"friction_constant: {nm} must be a finite number > 0, got {v!r}")
    p = beta if energy else beta + 1.0
    return mu * c_normal / ((beta + 1.0) * (dt * v_ref) ** p * float(depth) ** (gamma + 1.0 - alpha))


@kernel
def pbfd_point(s, k, cn, cf, alpha, beta, gamma, energy, R, p, Rk, pk, F, K):
    """PBFD's contact point ``k`` on its body at pose ``(R, p)``, which was at ``(Rk, pk)`` at
    the start of the step (poses as :func:`contact_detect` takes them), with ``cn = C_perp``,
    ``cf = C_par``: writes ``F`` (3,), the point's residual term ``dP/dx - C_par f_par``, and
    ``K`` (3, 3) = ``dF/dx`` (module docstring; zero out of contact); returns the normal energy
    ``C_perp d^(alpha+1) / (alpha+1)``.  With ``energy`` the friction is Eq. 11's energy
    (``F``, ``K``: its gradient and Hessian, spurious normal force included; the returned energy
    includes ``C_par |u|^(beta+1) d^(gamma+1)``)."""
    x0, x1, x2, dep, n0, n1, n2 = contact_detect(s, k, R, p)
    e0, e1, e2, m0, m1, m2 = 0.0, 0.0, 0.0, 0.0, 0.0, 1.0
    if dep > 0.0 and cf > 0.0:
        y0, y1, y2, _sk, m0, m1, m2 = contact_detect(s, k, Rk, pk)  # x_k and the frozen normal n_k
        e0, e1, e2 = x0 - y0, x1 - y1, x2 - y2
    return pbfd_law(dep, n0, n1, n2, e0, e1, e2, m0, m1, m2, cn, cf, alpha, beta, gamma, energy, F, K)


@kernel
def pbfd_law(dep, n0, n1, n2, e0, e1, e2, m0, m1, m2, cn, cf, alpha, beta, gamma, energy, F, K):
    """PBFD's point law (module docstring) at depth ``dep`` with normal ``n``, displacement over
    the step ``e = x - x_k`` (between bodies: relative to the shape's body) and frozen
    start-of-step normal ``m = n_k``: writes ``F``, ``K``, returns the energy (:func:`pbfd_point`)."""
    for r in range(3):
        F[r] = 0.0
        for c in range(3):
            K[r, c] = 0.0
    if dep <= 0.0:
        return 0.0
    da = dep ** alpha
    fn = -cn * da  # dP/dx = -C_perp d^alpha n
    F[0] = fn * n0
    F[1] = fn * n1
    F[2] = fn * n2
    kn = cn * alpha * dep ** (alpha - 1.0)
    for r in range(3):
        nr = n0 if r == 0 else (n1 if r == 1 else n2)
        for c in range(3):
            nc = n0 if c == 0 else (n1 if c == 1 else n2)
            K[r, c] = kn * nr * nc
    ef = 0.0
    if cf > 0.0:
        ef = pbfd_friction(cf, beta, gamma, energy, dep, n0, n1, n2, e0, e1, e2, m0, m1, m2, F, K)
    return cn * da * dep / (alpha + 1.0) + ef


@kernel
def pbfd_friction(cf, beta, gamma, energy, dep, n0, n1, n2, e0, e1, e2, m0, m1, m2, F, K):
    """Adds ``-C_par f_par`` (Eq. 12's first term) to ``F`` and its Jacobian to ``K`` for a contact
    point at depth ``dep`` > 0 with normal ``n``, displaced by ``e = x - x_k`` over the step,
    tangent plane frozen at the start of the step (normal ``m = n_k``); returns 0.  With
    ``energy``: the gradient and Hessian of Eq. 11's ``C_par |u|^(beta+1) d^(gamma+1)`` instead
    (tangential force ``(beta+1) |u|^(beta-1) d^(gamma+1) u`` and the spurious normal force, module
    docstring), returning that energy."""
    en = m0 * e0 + m1 * e1 + m2 * e2
    u0 = e0 - en * m0  # u = T (x - x_k)
    u1 = e1 - en * m1
    u2 = e2 - en * m2
    uu = math.sqrt(u0 * u0 + u1 * u1 + u2 * u2)
    c1 = cf * (beta + 1.0)
    bt = beta - 1.0 if energy else beta  # the power of |u| in the tangential force ``a u``
    dg = dep**gamma
    if not (uu > 0.0):
        # the force vanishes at u = 0 (beta > 0); so does its Jacobian, except the energy form's
        # Hessian with beta = 1 (|u|^2: (beta+1) d^(gamma+1) T)
        if energy and bt == 0.0:
            a = c1 * dg * dep
            for r in range(3):
                mr = m0 if r == 0 else (m1 if r == 1 else m2)
                for c in range(3):
                    mc = m0 if c == 0 else (m1 if c == 1 else m2)
                    K[r, c] += a * ((1.0 if r == c else 0.0) - mr * mc)
        return 0.0
    ub = uu**bt
    a = c1 * ub * dg * dep  # tangential: a u (PBFD: -C_par f_par)
    F[0] += a * u0
    F[1] += a * u1
    F[2] += a * u2
    bb = c1 * dg * dep * bt * uu ** (bt - 2.0) if bt != 0.0 else 0.0  # u u^T term
    cd = c1 * (gamma + 1.0) * dg * ub  # depth term: -(gamma+1) d^gamma |u|^bt u n^T
    sp = 0.0  # energy form: the spurious normal force's d-derivative, gamma (gamma+1) |u|^(beta+1) d^(gamma-1) n n^T
    ef = 0.0
    if energy:
        ue = uu ** (beta + 1.0)
        fs = cf * (gamma + 1.0) * ue * dg  # dP/dx gets -fs n (f* = fs n pushes out)
        F[0] -= fs * n0
        F[1] -= fs * n1
        F[2] -= fs * n2
        sp = cf * gamma * (gamma + 1.0) * ue * dep ** (gamma - 1.0)
        ef = cf * ue * dg * dep
    for r in range(3):
        ur = u0 if r == 0 else (u1 if r == 1 else u2)
        mr = m0 if r == 0 else (m1 if r == 1 else m2)
        nr = n0 if r == 0 else (n1 if r == 1 else n2)
        for c in range(3):
            uc = u0 if c == 0 else (u1 if c == 1 else u2)
            mc = m0 if c == 0 else (m1 if c == 1 else m2)
            nc = n0 if c == 0 else (n1 if c == 1 else n2)
            kk = a * ((1.0 if r == c else 0.0) - mr * mc) + bb * ur * uc - cd * ur * nc
            if energy:  # d(-fs n)/dx = -cd n u^T + sp n n^T  (cd = C_par (beta+1)(gamma+1) |u|^(beta-1) d^gamma)
                kk += -cd * nr * uc + sp * nr * nc
            K[r, c] += kk
    return ef
