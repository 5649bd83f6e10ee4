"""High-order PBAD (pbad3/pbad4) on a ball2 chain released horizontally: one run, prints a summary
(max E - E0 relative to the scale m g L n^2 / 2, convergence, rejected/sub-stepped steps).
Usage: python scripts/figures/fig_pbad_highorder.py LINKS DT [pbad3|pbad4] [T] [init] [max_rotation] [fallback]
e.g. python scripts/figures/fig_pbad_highorder.py 10 0.05 pbad3 10"""

import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "models")]
import pbsim  # noqa: E402
import pbsim_models  # noqa: E402
from pbsim.integrators import State, make  # noqa: E402


def run(n, dt, name="pbad3", T=10.0, verbose=True, **opts):
    """Returns a dict: finite, rise (max E - E0), scale, end, conv, its, rejected, substeps, rot, wall."""
    m = pbsim_models.chain(n, joint="ball2")
    integ = make(name, m, **opts)
    s = State.make(m, m.neutral())
    e0 = pbsim.energy(m, s.q[0], s.v[0]).sum()
    scale = pbsim_models.chain_energy_scale(n)
    t0 = time.perf_counter()
    E, conv, its, rej, subs, rot, fb = [], [], [], [], [], [], []
    for _ in range(int(round(T / dt))):
        s, d = integ.step(s, None, dt)
        E.append(d.energy[0])
        conv.append(bool(d.converged[0]))
        its.append(int(d.iterations[0]))
        rej.append(bool(d.extra.get("rejected", [False])[0]))
        subs.append(int(d.extra.get("substeps", [1])[0]))
        rot.append(float(d.extra.get("rotation", [np.nan])[0]))
        fb.append(bool(d.extra.get("fallback", [False])[0]))
        if not (np.isfinite(s.q).all() and np.isfinite(s.v).all()):
            break
    E = np.array(E)
    r = dict(
        finite=bool(np.isfinite(s.q).all() and np.isfinite(s.v).all() and len(E) == int(round(T / dt))),
        rise=float(np.nanmax(E) - e0),
        scale=scale,
        end=float(E[-1] - e0),
        minE=float(np.nanmin(E) - e0),
        conv=float(np.mean(conv)),
        its=float(np.mean(its)),
        rejected=int(np.sum(rej)),
        substeps=int(np.sum(subs)),
        fallback=int(np.sum(fb)),
        steps=len(E),
        rot=float(np.nanmax(rot)),
        wall=time.perf_counter() - t0,
        E=E,
    )
    if verbose:
        print(
            f"{n} links dt={dt} {name} {opts}: finite={r['finite']} max(E-E0)={r['rise']:+.4g} J "
            f"({100 * r['rise'] / scale:+.2f}% of {scale:.3g} J) E(end)-E0={r['end']:+.4g} min={r['minE']:+.4g} "
            f"conv={r['conv']:.3f} its/step={r['its']:.1f} rejected={r['rejected']}/{r['steps']} "
            f"sub-steps={r['substeps']} fallback={r['fallback']} max rot/interval={r['rot']:.2f} wall={r['wall']:.1f}s",
            flush=True,
        )
        print("E - E0 at 20 times:", np.round(E[:: max(1, len(E) // 20)] - e0, 3))
    return r


if __name__ == "__main__":
    a = sys.argv[1:]
    opts = {}
    if len(a) > 4:
        opts["init"] = a[4]
    if len(a) > 5:
        opts["max_rotation"] = float(a[5])
    if len(a) > 6:
        opts["fallback"] = a[6]
    run(int(a[0]), float(a[1]), a[2] if len(a) > 2 else "pbad3", float(a[3]) if len(a) > 3 else 10.0, **opts)
