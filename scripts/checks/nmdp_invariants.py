"""B-T2 on the Robosimian jump (notes/pbfd_nmdp.md B4): every accepted PGM iterate has
``|G|_inf <= tol`` and no accepted iterate raised K; at most 1 % of the steps hit the outer iteration
cap.  Per method and dt, the 10 s jump of ``scripts/figures/nmdp_robosimian.py`` (same robot, gains and
motion), counting from each step's Diagnostics: steps that hit the iteration cap, the largest
accepted ``|G|_inf`` against the tolerance, K rises, sub-stepped steps.

    python scripts/checks/nmdp_invariants.py [--methods nmdp,pbd_nmdp,nmdp_zo,pbd_nmdp_zo] [--dts 5,20,50] [--seconds 10]
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "figures"))  # nmdp_robosimian
import nmdp_robosimian as R  # noqa: E402
from pbsim.integrators import State, make  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--methods", default="nmdp,pbd_nmdp,nmdp_zo,pbd_nmdp_zo")
    ap.add_argument("--dts", default="5,20,50", help="time steps [ms]")
    ap.add_argument("--seconds", type=float, default=10.0)
    a = ap.parse_args(argv)
    if not R.URDF.is_file():
        sys.exit(f"Robosimian not found at {R.URDF} (set PBSIM_SHARED)")
    model, scene, q0 = R.build()
    print(
        "| method | dt [ms] | steps | iteration-cap steps [%] | max accepted abs(G)_inf | tol | K rises | sub-stepped steps | B-T2 |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for method in a.methods.split(","):
        for dtm in [float(x) for x in a.dts.split(",")]:
            dt = dtm * 1e-3
            ref = R.reference(model, "jump", dt)
            integ = make(method, model, scene, on_fail="ignore")
            s = State.make(model, q0)
            n = int(round(a.seconds / dt))
            cap = rises = sub = 0
            gacc = 0.0
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                for _ in range(n):
                    s, d = integ.step(s, ref(s.t, s), dt)
                    cap += int(d.extra["iteration_cap"][0] > 0)
                    gacc = max(gacc, float(d.extra["accepted_max_residual"][0]))
                    rises += int(d.extra["accepted_k_rises"][0])
                    sub += int(d.extra["substeps"][0] > 1)
            ok = cap <= 0.01 * n and gacc <= integ.gtol and rises == 0
            print(f"| {method} | {dtm:g} | {n} | {100 * cap / n:.2f} | {gacc:.3g} | {integ.gtol:.3g} | {rises} | {sub} | "
                  f"{'PASS' if ok else 'FAIL'} |", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
