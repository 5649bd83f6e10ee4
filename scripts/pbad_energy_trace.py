"""Energy trace of one long PBAD run, printed every 0.5 s of simulated time (so a run that is
stopped still leaves its numbers): a ball2 chain of N links released horizontally.

    python scripts/pbad_energy_trace.py LINKS DT INTEGRATOR SECONDS
    e.g. python scripts/pbad_energy_trace.py 100 0.0025 pbad3 10   (Fig. 2b, pbad3 row)

Columns: E, max E - E0 (also as % of the scale m g L n^2 / 2), share of converged steps, the
running count of (sub-)steps and wall time."""
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "models")]
import pbsim  # noqa: E402
import pbsim_models  # noqa: E402
from pbsim.integrators import State, make  # noqa: E402


def main(n, dt, name, T, link_length=0.1):
    model = pbsim_models.chain(n, joint="ball2")
    integ = make(name, model)
    s = State.make(model, model.neutral())
    e0 = pbsim.energy(model, s.q[0], s.v[0]).sum()
    scale = float(np.sum(model.mass)) / n * 9.81 * link_length * n * n / 2
    t0 = time.perf_counter()
    emax, conv, subs = -np.inf, [], 0
    steps = int(round(T / dt))
    every = max(1, int(round(0.5 / dt)))
    for k in range(1, steps + 1):
        s, d = integ.step(s, None, dt)
        E = d.energy[0]
        emax = max(emax, E)
        conv.append(bool(d.converged[0]))
        subs += int(np.asarray((d.extra or {}).get("substeps", [1]))[0])
        if not np.isfinite(E):
            print(f"NaN at step {k}", flush=True)
            break
        if k % every == 0 or k == steps:
            print(f"t={k * dt:.2f} E={E:+.4g} maxE-E0={emax - e0:+.4g} ({(emax - e0) / scale * 100:+.2f}% of "
                  f"{scale:.3g}) conv={np.mean(conv):.3f} substeps={subs} wall={time.perf_counter() - t0:.0f}s",
                  flush=True)


if __name__ == "__main__":
    a = sys.argv[1:]
    main(int(a[0]) if a else 100, float(a[1]) if len(a) > 1 else 0.0025, a[2] if len(a) > 2 else "pbad3",
         float(a[3]) if len(a) > 3 else 10.0)
