"""Write every generated model as URDF and MJCF under ``models/generated/``.

    python -m pbsim_models.write [OUT_DIR]

Chains of N = 10, 40, 100, 200 links with revolute and with 2-DOF ball ("ball2") joints, snakes
of 36, 72 and 195 DOF, the swimmer and the spider.  The files are committed; tests check that
reading them back gives the same dynamics as the generators.
"""

from __future__ import annotations

import sys
from pathlib import Path

from pbsim_models import chain, snake, spider, swimmer

OUT = Path(__file__).resolve().parents[1] / "generated"


def models():
    """(file stem, generator) for every model written."""
    out = []
    for n in (10, 40, 100, 200):
        out.append((f"chain{n}", lambda n=n: chain(n, joint="revolute")))
        out.append((f"ball2chain{n}", lambda n=n: chain(n, joint="ball2")))
    for n in (36, 72, 195):
        out.append((f"snake{n}", lambda n=n: snake(n)))
    out.append(("swimmer", swimmer))
    out.append(("spider", spider))
    return out


def write_all(out_dir=OUT, verbose=True) -> list[Path]:
    from pbsim.io.export_mjcf import write_mjcf
    from pbsim.io.export_urdf import write_urdf

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for stem, make in models():
        m = make()
        m.name = stem
        for ext, writer in ((".urdf", write_urdf), (".xml", write_mjcf)):
            path = out_dir / f"{stem}{ext}"
            lost = writer(m, path)
            written.append(path)
            if verbose:
                print(f"{path}  (nq {m.nq}, nv {m.nv})" + "".join(f"\n    {x}" for x in lost))
    return written


if __name__ == "__main__":
    write_all(sys.argv[1] if len(sys.argv) > 1 else OUT)
