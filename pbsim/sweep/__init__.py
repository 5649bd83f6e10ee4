"""Parameter sweeps of batched rollouts, run as Ray tasks (``pbsim sweep``; docs/sweep.md).

A sweep is a list of *points*, each a dict of parameters (:data:`PARAMS`, plus any integrator
option by name), usually the product of a grid (:func:`parse_grid`, :func:`expand`).  Every point
is one Ray task running one batched rollout (:func:`run_point`: ``pbsim.rollout(..., batch=B,
on_nan="stop")``) and returning one row of numbers; :func:`run_sweep` submits them with at most
``workers`` in flight, gathers the rows in the points' order, and never loses one: a point whose
rollout raised is a row with ``status="error"`` and the error; a task whose worker died is retried
by Ray (``max_retries``) and, when every try died, is a row with the Ray error; a task over
``timeout`` is cancelled and is a row with ``status="timeout"``; a rollout in which a trajectory
broke the shared divergence rule is a row with ``status="diverged"``, how many of the batch did
and the first one's reason.  :func:`write_rows` writes CSV (or Parquet through pyarrow),
:func:`plot_rows` a summary figure.

:func:`run_cmaes` replaces the grid by CMA-ES (:func:`pbsim.optim.cmaes.cmaes`) over continuous
parameters within bounds: each generation's candidates are points run the same way, through one
Ray session for all generations, every row kept with its ``generation`` and ``candidate``;
:func:`plot_cmaes` draws its learning curve.

The package, a file per role: :mod:`~pbsim.sweep.params` (the parameters, grids, spec files,
points), :mod:`~pbsim.sweep.point` (one point's rollout and row), :mod:`~pbsim.sweep.runner`
(Ray tasks), :mod:`~pbsim.sweep.space` (a CMA-ES search space and objective),
:mod:`~pbsim.sweep.cmaes` (the CMA-ES sweep), :mod:`~pbsim.sweep.results` (columns, CSV/Parquet)
and :mod:`~pbsim.sweep.plot` (figures); every name is re-exported here.

Ray is optional (``pip install 'pbsim[sweep]'``); nothing here imports it at module level.
"""

from __future__ import annotations

from pbsim.sweep.cmaes import CMA_OPTIONS, CmaesSweep, run_cmaes
from pbsim.sweep.params import (
    CMAES_COLUMNS,
    DEFAULTS,
    PARAMS,
    RESULT_COLUMNS,
    STATUSES,
    check_keys,
    expand,
    load_spec,
    parse_grid,
)
from pbsim.sweep.plot import plot_cmaes, plot_rows
from pbsim.sweep.point import run_point
from pbsim.sweep.results import columns, read_csv, summary, write_rows
from pbsim.sweep.runner import RaySweep, run_sweep, task_options
from pbsim.sweep.space import (
    DEFAULT_OBJECTIVE,
    FLOAT_PARAMS,
    LOG_RATIO,
    NUMERIC_RESULTS,
    check_cmaes,
    check_objective,
    check_space,
    decode,
    objective_value,
    parse_space,
)

__all__ = [
    "CMAES_COLUMNS",
    "CMA_OPTIONS",
    "DEFAULTS",
    "DEFAULT_OBJECTIVE",
    "FLOAT_PARAMS",
    "LOG_RATIO",
    "NUMERIC_RESULTS",
    "PARAMS",
    "RESULT_COLUMNS",
    "STATUSES",
    "CmaesSweep",
    "RaySweep",
    "check_cmaes",
    "check_keys",
    "check_objective",
    "check_space",
    "columns",
    "decode",
    "expand",
    "load_spec",
    "objective_value",
    "parse_grid",
    "parse_space",
    "plot_cmaes",
    "plot_rows",
    "read_csv",
    "run_cmaes",
    "run_point",
    "run_sweep",
    "summary",
    "task_options",
    "write_rows",
]
