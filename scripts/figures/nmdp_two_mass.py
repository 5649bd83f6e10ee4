"""Why the (N)MDP jump does not lift off at large dt: a two-mass hopper, solved exactly.

A torso (mass M) on a massless-free prismatic leg over a foot (mass m), vertical only, gravity, the
ground at z = 0.  The leg tracks an extension reference by stable PD at the new state (backward
Euler: ``F = kp (e_ref - e+) + kd (edot_ref - edot+)``, as ``nmdp``'s SPD).  One step of size h:

    M (V+ - V) / h = F - M g,     m (u+ - u) / h = -F - m g + lam

with the foot's normal force ``lam`` chosen three ways:

* ``nmdp``: paper 002's principle on this system, exactly -- ``lam`` minimises the kinetic energy
  at the new state over ``0 <= lam <= k d+^3 + zeta`` (``d+`` the foot's penetration at the new
  state: the nonconvex capacity).  KE(lam) is a convex quadratic, so the answer is its
  unconstrained minimiser clipped to [0, the largest feasible lam below it] (bisection);
* ``ne_mdp``: the same with the capacity at the old state (linearized MDP, Eq. 3);
* ``lcp``: non-penetration (backward-Euler complementarity: lam >= 0, z_f+ >= 0, lam z_f+ = 0),
  the reference of a rigid ground.

Derivation (the table's last column): with the reduced mass mu = M m / (M + m) and
``s = 1 + h (kd + h kp) / mu``, dKE/dlam = 0 gives the foot velocity

    u+ = -(M / (M + m)) r+ (s - 1) / s,      r+ = V+ - u+  (the leg's extension rate)

so while the leg extends (r+ > 0) the kinetic-energy-minimising contact lets the foot sink at a
fraction (s - 1) / s of the extension rate instead of stopping it: at small h (s -> 1) the foot
stops and the spring launches the torso; at larger h the implicit leg acts as a rigid strut over
the step and the minimum-KE impulse keeps the centre of mass where it is.  The launch therefore
depends on h at first order -- a property of the principle with stiff implicit actuation, not of
any one implementation.

The same holds for the walk's stance push (second table): the minimum-KE friction lets the
stance foot slide back instead of carrying the torso forward, by the same fraction.

    python scripts/figures/nmdp_two_mass.py [--dts 1,5,10,20,25,50]
"""

from __future__ import annotations

import argparse

import numpy as np

M, m, g = 95.0, 5.0, 9.81  # torso, foot (robosimian: ~100 kg, light lower legs)
# nmdp_robosimian.py's joint gains (kp = 30 M, kd = 0.3 M N m (s)/rad) seen at the foot through a
# ~0.3 m lever, four legs: kp / L^2 x 4, kd / L^2 x 4 (the static sag M g / KP is 7 mm)
KP, KD = 4 * 30.0 * (M + m) / 0.3**2, 4 * 0.3 * (M + m) / 0.3**2
E0 = 0.5  # stance leg length [m]
DREF = 0.005  # k = (M + m) g / DREF^3: the foot carries the weight at 5 mm (the integrators' default rule)
K = (M + m) * g / DREF**3
ZETA = 1e-3 * K * DREF**3


def e_ref(t):
    """The jump of nmdp_robosimian.py on one leg: crouch 0.2 m over 0.8 s, push to +0.06 m in
    0.15 s, back to stance by 1.2 s, period 2 s (smoothstep blends); returns (e, edot)."""
    tau = t % 2.0

    def blend(a, b, t0, t1):
        x = np.clip((tau - t0) / (t1 - t0), 0.0, 1.0)
        s = x * x * (3 - 2 * x)
        ds = 6 * x * (1 - x) / (t1 - t0) if 0 < x < 1 else 0.0
        return a + (b - a) * s, (b - a) * ds

    if tau < 0.8:
        return blend(E0, E0 - 0.2, 0.0, 0.8)
    if tau < 0.95:
        return blend(E0 - 0.2, E0 + 0.06, 0.8, 0.95)
    return blend(E0 + 0.06, E0, 0.95, 1.2)


def step_given(lam, zt, zf, V, u, h, er, edr, g=g):
    """New (zt, zf, V, u) for a given foot force lam (linear: the SPD force at the new state)."""
    # unknowns V+, u+; e+ = e + h (V+ - u+)
    e = zt - zf
    a11, a12 = M / h + h * KP + KD, -(h * KP + KD)
    a21, a22 = -(h * KP + KD), m / h + h * KP + KD
    f0 = KP * (er - e) + KD * edr
    b1 = M * V / h + f0 - M * g
    b2 = m * u / h - f0 - m * g + lam
    det = a11 * a22 - a12 * a21
    Vn = (b1 * a22 - a12 * b2) / det
    un = (a11 * b2 - a21 * b1) / det
    return zt + h * Vn, zf + h * un, Vn, un


def ke(V, u):
    return 0.5 * M * V * V + 0.5 * m * u * u


def capacity(zf):
    d = max(-zf, 0.0)
    return K * d**3 + ZETA if d > 0 or zf < 0.02 else 0.0  # zeta only near contact (margin 2 cm)


def solve(method, zt, zf, V, u, h, er, edr):
    if method == "lcp":
        s0 = step_given(0.0, zt, zf, V, u, h, er, edr)
        if s0[1] >= 0.0:
            return s0, 0.0
        s1 = step_given(1.0, zt, zf, V, u, h, er, edr)  # z_f+ is affine in lam
        lam = -s0[1] / (s1[1] - s0[1])
        return step_given(lam, zt, zf, V, u, h, er, edr), lam
    # minimiser of the quadratic KE(lam): from three evaluations
    k0, k1, k2 = (ke(*step_given(x, zt, zf, V, u, h, er, edr)[2:]) for x in (0.0, 1.0, 2.0))
    a = (k2 - 2 * k1 + k0) / 2.0
    b = k1 - k0 - a
    lam_u = max(-b / (2 * a), 0.0)
    if method == "ne_mdp":
        lam = min(lam_u, capacity(zf))
        return step_given(lam, zt, zf, V, u, h, er, edr), lam

    def slack(x):  # capacity at the new state minus x (decreasing in x)
        return capacity(step_given(x, zt, zf, V, u, h, er, edr)[1]) - x

    if slack(lam_u) >= 0:
        lam = lam_u
    elif slack(0.0) < 0:
        lam = 0.0
    else:
        lo, hi = 0.0, lam_u
        for _ in range(80):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if slack(mid) >= 0 else (lo, mid)
        lam = lo
    return step_given(lam, zt, zf, V, u, h, er, edr), lam


def run(method, h, seconds=10.0):
    d_static = DREF * (1.0 if method != "lcp" else 0.0)
    zf = -d_static
    zt = zf + E0
    V = u = 0.0
    n = int(round(seconds / h))
    zts, zfs = [zt], [zf]
    for k in range(n):
        er, edr = e_ref((k + 1) * h)
        (zt, zf, V, u), _ = solve(method, zt, zf, V, u, h, er, edr)
        zts.append(zt)
        zfs.append(zf)
    zts, zfs = np.array(zts), np.array(zfs)
    t = np.arange(n + 1) * h
    apex = [zts[(t >= p) & (t < p + 2.0)].max() - zts[0] for p in np.arange(0.0, seconds - 1e-9, 2.0)]
    return np.array(apex), float(zfs.min()), float(zfs.max())


def stroke(method, h, mu_fric=0.8):
    """The walk's stance push, horizontally: the foot loaded by the weight (friction capacity
    mu (M + m) g), the leg moving the torso 0.2 m ahead of the foot over 0.5 s (smoothstep), then
    held 0.5 s.  Friction ``lam`` in [-cap, cap]: ``nmdp`` the minimum-KE force (clipped),
    ``lcp`` Coulomb (stick when the sticking force is within the cap).  Returns (torso
    displacement, foot slide) [m]."""
    cap = mu_fric * (M + m) * g
    xt, xf, V, u = E0, 0.0, 0.0, 0.0
    n = int(round(1.0 / h))
    for k in range(n):
        t = (k + 1) * h
        x = min(t / 0.5, 1.0)
        er, edr = E0 + 0.2 * x * x * (3 - 2 * x), (1.2 * x * (1 - x) / 0.5 if x < 1 else 0.0)
        if method == "lcp":
            s0 = step_given(0.0, xt, xf, V, u, h, er, edr, g=0.0)
            s1 = step_given(1.0, xt, xf, V, u, h, er, edr, g=0.0)
            lam = -(s0[3]) / (s1[3] - s0[3])  # the foot's new velocity is affine in lam: stick
        else:
            k0, k1, k2 = (ke(*step_given(y, xt, xf, V, u, h, er, edr, g=0.0)[2:]) for y in (0.0, 1.0, 2.0))
            a = (k2 - 2 * k1 + k0) / 2.0
            lam = -(k1 - k0 - a) / (2 * a)
        lam = min(max(lam, -cap), cap)
        xt, xf, V, u = step_given(lam, xt, xf, V, u, h, er, edr, g=0.0)
    return xt - E0, xf


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dts", default="1,5,10,20,25,50", help="time steps [ms]")
    a = ap.parse_args(argv)
    mu = M * m / (M + m)
    print(f"two-mass hopper: M {M} kg, m {m} kg, kp {KP:g}, kd {KD:g}, k {K:.3g} (weight at {DREF * 1e3:g} mm)")
    print("| method | dt [ms] | apexes of the 5 jumps [m] | foot lowest [mm] | foot highest [mm] | (s - 1) / s |")
    print("|---|---:|---|---:|---:|---:|")
    for method in ("lcp", "nmdp", "ne_mdp"):
        for ms in [float(x) for x in a.dts.split(",")]:
            h = ms / 1000.0
            apex, lo, hi = run(method, h)
            s = 1.0 + h * (KD + h * KP) / mu
            ap_s = " ".join(f"{x:+.3f}" for x in apex) if np.isfinite(apex).all() else "diverged"
            print(f"| {method} | {ms:g} | {ap_s} | {lo * 1e3:.1f} | {hi * 1e3:.1f} | {(s - 1) / s:.2f} |")
    print()
    print("walk stance push (horizontal, 0.2 m over 0.5 s, foot loaded by the weight, friction 0.8):")
    print("| method | dt [ms] | torso moved [m] | foot slid [m] | (s - 1) / s |")
    print("|---|---:|---:|---:|---:|")
    for method in ("lcp", "nmdp"):
        for ms in [float(x) for x in a.dts.split(",")]:
            h = ms / 1000.0
            dx, slide = stroke(method, h)
            s = 1.0 + h * (KD + h * KP) / mu
            print(f"| {method} | {ms:g} | {dx:+.3f} | {slide:+.3f} | {(s - 1) / s:.2f} |")


if __name__ == "__main__":
    main()
