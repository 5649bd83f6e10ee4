"""Linear stability of PBAD (paper 000) on x'' = -w^2 x, and what it implies for the chain benchmark.

Part 1: spectral radius rho(w dt) of the one-step map of PBAD2 (Eq. 4) and of the collocation
schemes pbad3 / pbad4 (Eq. 6, with the weights pbsim uses: ``linear_spectral_radius``); a mode's energy is multiplied by rho^2 per step.
Part 2: normal modes of the N-link ball2 chain hanging at rest (K phi = w^2 M phi, M from CRBA, K the
gravity stiffness by central differences of RNEA) and, for dt = 0.05 and 0.1, the share of each
mode's energy the scheme keeps after 10 s (rho^(2 T/dt)).

    python scripts/figures/pbad_linear_stability.py [links,...]      (default 10,40,100)
"""

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "models")]
import pbsim  # noqa: E402
import pbsim_models  # noqa: E402
from pbsim.integrators.pbad import linear_spectral_radius as spectral_radius  # noqa: E402


def chain_modes(n):
    model = pbsim_models.chain(n, joint="ball2")
    q = np.zeros(model.nq)
    q[0] = np.pi / 2  # first hinge about y by 90 deg: the chain hangs along -z
    M = pbsim.crba(model, q)
    z = np.zeros(model.nv)
    K = np.zeros((model.nv, model.nv))
    h = 1e-6
    for j in range(model.nv):
        e = np.zeros(model.nv)
        e[j] = h
        K[:, j] = (pbsim.rnea(model, q + e, z, z) - pbsim.rnea(model, q - e, z, z)) / (2 * h)
    K = 0.5 * (K + K.T)
    L = np.linalg.cholesky(M)
    Li = np.linalg.inv(L)
    w2 = np.linalg.eigvalsh(Li @ K @ Li.T)
    return np.sqrt(np.clip(w2, 0.0, None))


def main(links=(10, 40, 100), T=10.0):
    grid = [0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0]
    print("| w dt | " + " | ".join(f"{x:g}" for x in grid) + " |")
    print("|---|" + "---|" * len(grid))
    for K, name in ((2, "pbad"), (3, "pbad3"), (4, "pbad4")):
        print(f"| {name} rho | " + " | ".join(f"{spectral_radius(K, x):.5f}" for x in grid) + " |")
    wmax = np.linspace(0.01, 20, 4000)
    for K, name in ((3, "pbad3"), (4, "pbad4")):
        r = np.array([spectral_radius(K, x) for x in wmax])
        print(f"{name}: max rho over w dt in (0, 20] = {r.max():.4f} at w dt = {wmax[r.argmax()]:.2f}")
    print()
    print(
        "| links | slowest modes w [rad/s] | fastest w | dt | integrator | energy kept after 10 s: mode 1 | mode 2 | mode 3 |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for n in links:
        w = chain_modes(n)
        for dt in (0.05, 0.1):
            for K, name in ((2, "pbad"), (3, "pbad3"), (4, "pbad4")):
                kept = [spectral_radius(K, wi * dt) ** (2 * T / dt) for wi in w[:3]]
                print(
                    f"| {n} | {', '.join(f'{x:.2f}' for x in w[:3])} | {w[-1]:.1f} | {dt} | {name} | "
                    + " | ".join(f"{k:.3g}" for k in kept)
                    + " |",
                    flush=True,
                )


if __name__ == "__main__":
    a = sys.argv[1:]
    main(tuple(int(x) for x in a[0].split(",")) if a else (10, 40, 100))
