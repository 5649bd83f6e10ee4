"""Energy trace of one long PBAD run, printed every 0.5 s of simulated time (so a run that is
stopped still leaves its numbers): a ball2 chain of N links released horizontally.

    python scripts/figures/pbad_energy_trace.py LINKS DT INTEGRATOR SECONDS [-v] [--save DIR] [--resume FILE]
                                        [-o KEY=VALUE ...]
    e.g. python scripts/figures/pbad_energy_trace.py 100 0.0025 pbad3 10   (Fig. 2b, pbad3 row)

Columns: E, max E - E0 (also as % of the scale m g L n^2 / 2), share of converged steps, the
running count of (sub-)steps and wall time.  ``-v`` also prints every step that was split, fell
back, did not converge or took > 2 s; ``--save DIR`` writes the state every 0.5 s (state_<k>.npz)
with the energy of every step so far (E, e0, dt: what ``fig_pbad_fig2.py --load`` reads), and
``--resume FILE`` restarts from one."""

import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "models")]
import pbsim  # noqa: E402
import pbsim_models  # noqa: E402
from pbsim.integrators import State, make  # noqa: E402


def main(n, dt, name, T, link_length=0.1, verbose=False, save=None, resume=None, options=()):
    model = pbsim_models.chain(n, joint="ball2")
    integ = make(name, model, **dict(o.split("=", 1) for o in options))
    s = State.make(model, model.neutral())
    e0 = pbsim.energy(model, s.q[0], s.v[0]).sum()
    k0, hist = 0, []
    if resume:
        z = np.load(resume)
        carry = {name: (float(dt), z["node"])} if z["node"].size else {}  # this scheme's node for this dt
        s = State(z["q"], z["v"], float(z["t"]), carry=carry)
        k0 = int(z["k"])
        hist = list(z["E"])
    scale = pbsim_models.chain_energy_scale(n, link_length)
    t0 = time.perf_counter()
    emax, conv, subs = (max(hist) if hist else -np.inf), [], 0
    steps = int(round(T / dt))
    every = max(1, int(round(0.5 / dt)))
    for k in range(k0 + 1, steps + 1):
        tw = time.perf_counter()
        s, d = integ.step(s, None, dt)
        tw = time.perf_counter() - tw
        E = d.energy[0]
        ex = d.extra or {}
        if verbose and (
            not d.converged[0] or tw > 2 or ex.get("substeps", [1])[0] > 1 or ex.get("fallback", [False])[0]
        ):
            print(
                f"  step {k} t={k * dt:.4f} E={E:+.4g} its={d.iterations[0]} conv={d.converged[0]} "
                f"substeps={ex.get('substeps', [1])[0]} fallback={ex.get('fallback', [False])[0]} "
                f"rotation={ex.get('rotation', [np.nan])[0]:.3f} wall={tw:.1f}s",
                flush=True,
            )
        emax = max(emax, E)
        hist.append(E)
        conv.append(bool(d.converged[0]))
        subs += int(np.asarray((d.extra or {}).get("substeps", [1]))[0])
        if not np.isfinite(E):
            print(f"NaN at step {k}", flush=True)
            break
        if save and k % every == 0:
            node = s.carry[name][1] if name in s.carry else np.zeros(0)
            np.savez(Path(save) / f"state_{k}.npz", q=s.q, v=s.v, t=s.t, node=node, k=k, E=np.array(hist), e0=e0, dt=dt)
        if k % every == 0 or k == steps:
            print(
                f"t={k * dt:.2f} E={E:+.4g} maxE-E0={emax - e0:+.4g} ({(emax - e0) / scale * 100:+.2f}% of "
                f"{scale:.3g}) conv={np.mean(conv):.3f} substeps={subs} wall={time.perf_counter() - t0:.0f}s",
                flush=True,
            )


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser()
    ap.add_argument("links", type=int, nargs="?", default=100)
    ap.add_argument("dt", type=float, nargs="?", default=0.0025)
    ap.add_argument("integrator", nargs="?", default="pbad3")
    ap.add_argument("seconds", type=float, nargs="?", default=10.0)
    ap.add_argument("-v", action="store_true")
    ap.add_argument("--save")
    ap.add_argument("--resume")
    ap.add_argument(
        "-o",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="integrator option (string value), e.g. -o fallback=pbad2",
    )
    a = ap.parse_args()
    main(a.links, a.dt, a.integrator, a.seconds, verbose=a.v, save=a.save, resume=a.resume, options=a.o)
