"""A sweep's rows: their columns, CSV/Parquet writing, reading back and a one-line summary."""

from __future__ import annotations

import csv
import os

import numpy as np

from pbsim.errors import InputError
from pbsim.sweep.params import CMAES_COLUMNS, PARAMS, RESULT_COLUMNS, STATUSES, _option_names


def columns(rows: list[dict]) -> list[str]:
    """``index`` (and a CMA-ES sweep's ``generation``, ``candidate``, ``objective``), the
    parameters (:data:`PARAMS` and integrator options, in first-seen order), then
    :data:`RESULT_COLUMNS`, then anything else a custom task function returned."""
    names = set(PARAMS) | _option_names()
    lead = [c for c in CMAES_COLUMNS if any(c in r for r in rows)]
    params, extra = [], []
    for r in rows:
        for k in r:
            if k in ("index", "traceback") or k in RESULT_COLUMNS or k in CMAES_COLUMNS:
                continue
            target = params if k in names else extra
            if k not in target:
                target.append(k)
    return ["index", *lead, *params, *RESULT_COLUMNS, *extra]


def _number(v) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))


def write_rows(rows: list[dict], path) -> str:
    """Write the rows to ``path``: Parquet when it ends in .parquet (needs pyarrow), else CSV
    (missing values empty).  Returns the path."""
    cols = columns(rows)
    os.makedirs(os.path.dirname(os.path.abspath(str(path))), exist_ok=True)
    if str(path).endswith(".parquet"):
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError:
            raise InputError(f"{path}: Parquet needs pyarrow (pip install pyarrow); or write .csv") from None
        data = {}
        for c in cols:
            vals = [r.get(c) for r in rows]
            if all(_missing(v) or _number(v) for v in vals):
                data[c] = pa.array([np.nan if _missing(v) else float(v) for v in vals], pa.float64())
            else:
                data[c] = pa.array([None if _missing(v) else str(v) for v in vals], pa.string())
        pq.write_table(pa.table(data), str(path))
        return str(path)
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(cols)
        for r in rows:
            w.writerow(["" if _missing(r.get(c)) else _fmt(r.get(c)) for c in cols])
    return str(path)


def _missing(v) -> bool:
    return v is None or (isinstance(v, float) and np.isnan(v))


def _fmt(v):
    return repr(float(v)) if isinstance(v, (float, np.floating)) else v


def read_csv(path) -> list[dict]:
    """The rows of a sweep CSV (numbers as floats where they parse)."""
    out = []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            row = {}
            for k, v in r.items():
                try:
                    row[k] = float(v) if v != "" else None
                except ValueError:
                    row[k] = v
            out.append(row)
    return out


def summary(rows: list[dict]) -> str:
    """One line: how many rows of each status."""
    n = {s: sum(r.get("status") == s for r in rows) for s in STATUSES}
    return f"{len(rows)} rows: " + ", ".join(f"{v} {k}" for k, v in n.items() if v or k == "ok")
