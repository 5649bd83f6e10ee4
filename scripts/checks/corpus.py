"""Every robot file of the corpus through pbsim's loaders.

    python scripts/checks/corpus.py            # counts, the MJCF table, every refusal, what is dropped
    python scripts/checks/corpus.py -v         # also every file that loaded with a warning
    python scripts/checks/corpus.py --mjcf     # MJCF files only (about 10 s)

The corpus: each URDF under ``pybullet_data``; each MJCF under gymnasium's ``envs/mujoco/assets``,
``pybullet_data/mjcf``, MuJoCo MJX's ``test_data`` (an installed ``mujoco.mjx``, else the cache the
tests fill: ``tests/conftest.py: mjx_test_data``) and ``../shared/robots`` (URDF and MJCF) when
present.  For each file: ``pbsim.load`` with default options, then ABA and CRBA at 3 random states
(finite?), the reference parser (Pinocchio's ``buildModelFromUrdf`` for URDF, MuJoCo's
``MjModel.from_xml_path`` for MJCF) and, where both load, the mass matrix against the
reference's (Pinocchio's CRBA / MuJoCo's ``mj_fullM``) at the same states.  A file pbsim refuses
must raise a :class:`pbsim.PbsimError` naming the file; any other exception is a crash.

Files the reference loads but pbsim refuses by default are allowed only for the reasons in
``RETRY`` (documented in docs/robots.md), and only if they load with the option named there.
``tests/io/test_corpus.py`` runs the same checks and asserts them; counts go to docs/robots.md.

The MJCF table has one row per file: its bodies and DOF in pbsim, what pbsim still does not
simulate (``Model.notes``, one short phrase each) or why it was refused; the counts at the end say
how many files each kind of note touches.
"""

from __future__ import annotations

import argparse
import glob
import importlib.util
import os
import re
import sys
import time
import warnings
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "models")]

import pbsim  # noqa: E402

N_STATES = 3
M_TOL = 1e-9  # relative mass-matrix error against the reference

# Refusal reasons (first match wins): (pattern in "ErrorClass: message", short reason)
REASONS = [
    (r"mimics joint|mimic joints form a cycle", "mimic joint (not coupled)"),
    (r"^MeshNotFoundError", "mesh file not found"),
    (r"MuJoCo could not compile", "MuJoCo refuses it"),
    (r"malformed XML", "malformed XML"),
    (r"not a number list|expected \d+ numbers", "attribute is not a number list"),
    (r"expected one root link|refers to unknown link|not a tree", "not a kinematic tree"),
    (r"NaN or inf|not finite", "NaN or inf value"),
    (r"^InertiaError", "non-physical inertia"),
    (r"unknown type", "unknown joint type"),
    (r"zero (or invalid )?axis", "zero joint axis"),
]

# Refused by default although the reference loads them: the reason, the option that loads the
# file anyway, and why it is not the default.
RETRY = {
    "mimic joint (not coupled)": (
        {"mimic": "independent"},
        "a mimic joint pbsim cannot couple (not a 1-DOF joint, unknown master, cycle); "
        "mimic='independent' loads it as an independent DOF, as Pinocchio's buildModelFromUrdf "
        "(mimic=False) and pybullet do",
    ),
    "mesh file not found": (
        {"missing_meshes": "warn"},
        "a mesh the file names does not exist; Pinocchio's model builder reads no meshes, "
        "missing_meshes='warn' skips the shape",
    ),
}


@dataclass
class Record:
    collection: str  # "pybullet_data" | "gymnasium" | "mjx" | "shared"
    kind: str  # "urdf" | "mjcf"
    rel: str
    path: str
    status: str = ""  # "loaded" | "refused" | "crash"
    reason: str = ""  # refusals: short reason; crashes: the exception
    message: str = ""
    warnings: list[str] = field(default_factory=list)
    nq: int = 0
    nv: int = 0
    finite: bool | None = None  # ABA and CRBA finite at N_STATES random states
    reference_loads: bool | None = None  # Pinocchio (URDF) / MuJoCo (MJCF) loads it
    m_error: float | None = None  # mass matrix vs the reference's, relative
    retry_ok: bool | None = None  # refused but reference-loadable: loads with RETRY's option
    nbodies: int = 0  # pbsim's bodies (one per moving MuJoCo body / URDF link group)
    notes: list[str] = field(default_factory=list)  # Model.notes: what pbsim changed or does not simulate


def mjx_test_data_dir() -> Path | None:
    """MJX's ``test_data`` folder: an installed ``mujoco.mjx``'s, else the tests' cache
    (``$PBSIM_CACHE_DIR/mjx`` or ``~/.cache/pbsim/mjx``); None when neither is there."""
    spec = importlib.util.find_spec("mujoco")
    for loc in (spec.submodule_search_locations or []) if spec else []:
        p = Path(loc) / "mjx" / "test_data"
        if p.is_dir():
            return p
    base = os.environ.get("PBSIM_CACHE_DIR")
    p = (Path(base) if base else Path.home() / ".cache" / "pbsim") / "mjx" / "mujoco" / "mjx" / "test_data"
    return p if p.is_dir() else None


SHARED_ROBOTS = ROOT.parent / "shared" / "robots"


def corpus(collections=("pybullet_data", "gymnasium", "mjx", "shared"), kinds=("urdf", "mjcf")) -> list[Record]:
    """Every URDF in pybullet_data, every MJCF in gymnasium's assets, pybullet_data/mjcf and MJX's
    test data, and both kinds in ../shared/robots (module doc), of ``collections`` and ``kinds``."""
    out = []
    try:
        import pybullet_data

        d = pybullet_data.getDataPath()
        for p in sorted(glob.glob(os.path.join(d, "**", "*.urdf"), recursive=True)):
            out.append(Record("pybullet_data", "urdf", os.path.relpath(p, d), p))
        for p in sorted(glob.glob(os.path.join(d, "mjcf", "**", "*.xml"), recursive=True)):
            out.append(Record("pybullet_data", "mjcf", os.path.relpath(p, d), p))
    except ImportError:
        pass
    try:
        import gymnasium

        d = os.path.join(os.path.dirname(gymnasium.__file__), "envs", "mujoco", "assets")
        for p in sorted(glob.glob(os.path.join(d, "**", "*.xml"), recursive=True)):
            out.append(Record("gymnasium", "mjcf", os.path.relpath(p, d), p))
    except ImportError:
        pass
    d = mjx_test_data_dir()
    if d is not None:
        for p in sorted(glob.glob(os.path.join(d, "**", "*.xml"), recursive=True)):
            out.append(Record("mjx", "mjcf", "mjx/" + os.path.relpath(p, d), p))
    if SHARED_ROBOTS.is_dir():
        for ext, kind in (("urdf", "urdf"), ("xml", "mjcf"), ("mjcf", "mjcf")):
            for p in sorted(glob.glob(os.path.join(SHARED_ROBOTS, "**", f"*.{ext}"), recursive=True)):
                out.append(Record("shared", kind, "shared/" + os.path.relpath(p, SHARED_ROBOTS), p))
    return [r for r in out if r.collection in collections and r.kind in kinds]


def reason_of(e: BaseException) -> str:
    text = f"{type(e).__name__}: {e}"
    for pat, label in REASONS:
        if re.search(pat, text):
            return label
    return f"{type(e).__name__}: {str(e).split(': ')[-1][:60]}"


def _load(path, **kw):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        m = pbsim.load(path, **kw)
    return m, [str(x.message) for x in w]


def _reference_loads(rec: Record) -> bool | None:
    """Does Pinocchio (URDF) / MuJoCo (MJCF) load the file?  None when it is not installed."""
    if rec.kind == "urdf":
        try:
            import pinocchio as pin
        except ImportError:
            return None
        try:
            pin.buildModelFromUrdf(rec.path)
            return True
        except Exception:  # Pinocchio raises ValueError/RuntimeError on files it cannot read
            return False
    try:
        import mujoco
    except ImportError:
        return None
    try:
        mujoco.MjModel.from_xml_path(rec.path)
        return True
    except Exception:
        return False


def _mass_matrix_error(rec: Record, model, Q) -> float | None:
    from tests.oracles import PinOracle, rel_err

    M = pbsim.crba(model, Q)
    if rec.kind == "urdf":
        if np.any(model.jtype == 2):  # ball joints: Pinocchio reads no spherical URDF joint
            return None
        ref = PinOracle(model, rec.path)
        # URDF has no armature: what pbsim has is the builder's guard on massless DOFs
        return max(rel_err(M[k] - np.diag(model.armature), ref.crba(Q[k])) for k in range(len(Q)))
    import mujoco

    mj = mujoco.MjModel.from_xml_path(rec.path)
    md = mujoco.MjData(mj)
    err = 0.0
    for k in range(len(Q)):
        md.qpos[:] = Q[k]
        mujoco.mj_forward(mj, md)
        Mm = np.zeros((mj.nv, mj.nv))
        mujoco.mj_fullM(mj, md, Mm)
        # free joints: MuJoCo's linear velocity is in world axes, pbsim's in the body's (v_mj = R v)
        T = np.eye(model.nv)
        poses = pbsim.forward_kinematics(model, Q[k])
        for i in np.flatnonzero(model.jtype == 3):
            j = model.iv[i]
            T[j : j + 3, j : j + 3] = poses[i][:3, :3]
        err = max(err, rel_err(M[k], T.T @ Mm @ T))
    return err


def check(rec: Record, compare: bool = True) -> Record:
    """Load ``rec.path`` and fill in the record (see module doc)."""
    try:
        model, rec.warnings = _load(rec.path)
        rec.status = "loaded"
    except pbsim.PbsimError as e:
        rec.status, rec.reason, rec.message = "refused", reason_of(e), str(e)
        model = None
    except Exception as e:  # anything else is a loader bug
        rec.status, rec.reason, rec.message = "crash", f"{type(e).__name__}: {e}", repr(e)
        model = None
    rec.reference_loads = _reference_loads(rec)
    if model is None and rec.reference_loads and rec.reason in RETRY:
        try:
            model, _ = _load(rec.path, **RETRY[rec.reason][0])
            rec.retry_ok = True
        except Exception:
            rec.retry_ok = False
    if model is None:
        return rec
    rec.nq, rec.nv = model.nq, model.nv
    rec.nbodies = model.nb
    rec.notes = list(model.notes)
    rng = np.random.default_rng(0)
    Q = np.array([model.random_configuration(rng) for _ in range(N_STATES)]).reshape(N_STATES, model.nq)
    V = rng.normal(size=(N_STATES, model.nv))
    T = rng.normal(size=(N_STATES, model.nv))
    with np.errstate(all="ignore"):
        rec.finite = bool(np.all(np.isfinite(pbsim.aba(model, Q, V, T))) and np.all(np.isfinite(pbsim.crba(model, Q))))
    if compare and rec.reference_loads and model.nv > 0:
        rec.m_error = _mass_matrix_error(rec, model, Q)
    return rec


def run(records=None, compare: bool = True) -> list[Record]:
    return [check(r, compare) for r in (corpus() if records is None else records)]


def table(records: list[Record]) -> str:
    rows = []
    for kind in ("urdf", "mjcf"):
        rs = [r for r in records if r.kind == kind]
        if not rs:
            continue
        label = f"{kind.upper()} ({' + '.join(dict.fromkeys(r.collection for r in rs))})"
        ref = "Pinocchio" if kind == "urdf" else "MuJoCo"
        loaded = [r for r in rs if r.status == "loaded"]
        rows.append(f"{label}: {len(rs)} files")
        rows.append(f"  loaded                          {len(loaded):5d}")
        rows.append(f"    of which static (nv = 0)      {sum(r.nv == 0 for r in loaded):5d}")
        rows.append(f"    with a loader warning         {sum(bool(r.warnings) for r in loaded):5d}")
        rows.append(f"    ABA/CRBA finite               {sum(bool(r.finite) for r in loaded):5d}")
        cmp = [r for r in loaded if r.m_error is not None]
        if cmp:
            worst = max(r.m_error for r in cmp)
            rows.append(
                f"    mass matrix = {ref:<9}       {sum(r.m_error < M_TOL for r in cmp):5d} of {len(cmp)}"
                f" (worst relative error {worst:.1e})"
            )
        refused = Counter(r.reason for r in rs if r.status == "refused")
        rows.append(f"  refused                         {sum(refused.values()):5d}")
        for reason, n in refused.most_common():
            rows.append(f"    {reason:<30}{n:5d}")
        crashes = [r for r in rs if r.status == "crash"]
        if crashes:
            rows.append(f"  CRASHED (not a PbsimError)      {len(crashes):5d}")
        ref_ok = [r for r in rs if r.reference_loads]
        rows.append(
            f"  {ref} loads                  {len(ref_ok):5d}"
            if kind == "urdf"
            else f"  {ref} loads                     {len(ref_ok):5d}"
        )
        rej = [r for r in ref_ok if r.status != "loaded"]
        rows.append(
            f"    but pbsim refuses by default  {len(rej):5d}"
            + (f" (all load with the documented option: {all(r.retry_ok for r in rej)})" if rej else "")
        )
    return "\n".join(rows)


def note_kind(note: str) -> str:
    """A short phrase for a ``Model.notes`` entry: names in quotes as X, numbers as N, the text
    before the list of names (its first ``": "``; after it too when that head only names an
    element: ``joint X: stiffness of a ball joint is not imported``), at most 70 characters."""
    t = re.sub(r"'[^']*'", "X", note)
    t = re.sub(r"\b\d+(\.\d+)?(e-?\d+)?\b", "N", t)
    parts = t.split(": ")
    head = parts[0]
    if len(parts) > 1 and re.fullmatch(r"\w+ X", head):
        head = f"{head}: {parts[1]}"
    return head[:70]


def mjcf_table(records: list[Record]) -> str:
    """One row per MJCF file (module doc), then how many files each kind of note touches."""
    rs = [r for r in records if r.kind == "mjcf"]
    if not rs:
        return ""
    w = max(len(r.rel) for r in rs)
    lines = [f"{'MJCF file':<{w}}  bodies/DOF  still not simulated (Model.notes) / why refused", "-" * (w + 60)]
    for r in rs:
        if r.status == "loaded":
            what = "; ".join(note_kind(n) for n in r.notes) or "-"
            lines.append(f"{r.rel:<{w}}  {r.nbodies:>4d}/{r.nv:<5d}  {what}")
        else:
            lines.append(f"{r.rel:<{w}}  {r.status.upper():>10s}  {r.reason}: {r.message.splitlines()[0][-120:]}")
    kinds = Counter(k for r in rs if r.status == "loaded" for k in dict.fromkeys(note_kind(n) for n in r.notes))
    loaded = [r for r in rs if r.status == "loaded"]
    lines += [
        "",
        f"MJCF: {len(rs)} files, {len(loaded)} loaded ({sum(not r.notes for r in loaded)} with nothing dropped), "
        f"{sum(r.status == 'refused' for r in rs)} refused, {sum(r.status == 'crash' for r in rs)} crashed",
    ]
    for k, n in kinds.most_common():
        lines.append(f"  {n:4d} file(s): {k}")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-v", action="store_true", help="also every file that loaded with a warning")
    ap.add_argument("--mjcf", action="store_true", help="MJCF files only")
    args = ap.parse_args(sys.argv[1:] if argv is None else argv)
    t0 = time.perf_counter()
    recs = run(corpus(kinds=("mjcf",) if args.mjcf else ("urdf", "mjcf")))
    dt = time.perf_counter() - t0
    print(table(recs))
    print(f"({len(recs)} files in {dt:.1f} s)\n")
    for r in recs:
        if r.status != "loaded" and r.kind == "urdf":
            ref = "Pinocchio" if r.kind == "urdf" else "MuJoCo"
            extra = ""
            if r.reference_loads:
                extra = (
                    f"  [{ref} loads it; with {RETRY[r.reason][0]}: {'loads' if r.retry_ok else 'FAILS'}]"
                    if r.reason in RETRY
                    else f"  [{ref} loads it: NOT ALLOWED]"
                )
            print(f"{r.status:8s} {r.rel}: {r.reason}{extra}\n         {r.message.splitlines()[0][:220]}")
        elif args.v and r.warnings:
            print(f"warned   {r.rel}: {r.warnings[0][:200]}")
    off = [r for r in recs if r.m_error is not None and not r.m_error < M_TOL]
    for r in off:
        print(f"mass matrix off the reference by {r.m_error:.1e} (relative): {r.rel}  [{'; '.join(r.notes)[:200]}]")
    print()
    print(mjcf_table(recs))
    bad = [r for r in recs if r.status == "crash" or (r.status == "loaded" and not r.finite)]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
