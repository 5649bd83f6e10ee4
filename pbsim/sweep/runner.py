"""Points run as Ray tasks: :class:`RaySweep` (retries, timeouts, every point a row) and :func:`run_sweep`."""

from __future__ import annotations

import pickle
import time
from typing import Callable

from pbsim.errors import InputError
from pbsim.sweep.point import run_point


def _task(fn, model_bytes, point, threads):
    """The body of one Ray task: ``threads`` numba threads, then ``fn(model, point)``.  The model
    travels pickled: Ray's object store hands numpy arrays over read-only, and numba compiles (and
    does not cache) a separate specialization of every kernel for read-only arrays."""
    model = pickle.loads(model_bytes)
    if threads:
        try:
            import numba

            numba.set_num_threads(max(1, min(int(threads), numba.config.NUMBA_NUM_THREADS)))
        except Exception:  # noqa: BLE001 - a thread setting never fails a point
            pass
    return fn(model, point)


def task_options(point: dict, threads: int, max_retries: int) -> dict:
    """Ray's resource request for one point: ``threads`` CPUs, and one whole GPU when the point runs
    on ``device="cuda"`` (Ray then sets ``CUDA_VISIBLE_DEVICES`` to that GPU for the task)."""
    opts = {"num_cpus": threads, "max_retries": max_retries}
    if point.get("device", "cpu") == "cuda":
        opts["num_gpus"] = 1
    return opts


def _ray_error(e: BaseException) -> str:
    """The message of a failed Ray task: the task's own exception when it raised one (Ray wraps it
    in a RayTaskError), else Ray's error (WorkerCrashedError ...) and its first lines."""
    import re

    cause = getattr(e, "cause", None)
    if isinstance(cause, BaseException):
        return f"{type(cause).__name__}: {cause}".strip()
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(e))
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return f"{type(e).__name__}: {' '.join(lines[:2])}"[:500]


def _error_row(status: str, err: str) -> dict:
    return {"status": status, "error": err}


class RaySweep:
    """A connection to Ray for sweeps: a local Ray of ``workers`` CPUs started here when
    ``address`` is None (shut down by :meth:`close`), else the cluster at ``address`` ("auto":
    the one ``ray start`` made on this machine; "ray://host:10001": Ray Client).  :meth:`map`
    runs points as tasks; it can be called many times (a CMA-ES generation each)."""

    def __init__(
        self,
        address: str | None = None,
        workers: int = 2,
        threads: int = 1,
        max_retries: int = 3,
        timeout: float | None = None,
        init_kwargs: dict | None = None,
    ):
        try:
            import ray
        except ImportError:
            raise InputError("pbsim sweep runs on Ray: pip install 'pbsim[sweep]' (or pip install ray)") from None
        self.ray = ray
        self.workers = max(1, int(workers))
        self.threads = max(1, int(threads))
        self.max_retries = int(max_retries)
        self.timeout = timeout
        self.own = False
        if not ray.is_initialized():
            kw = {"include_dashboard": False, "log_to_driver": False, "configure_logging": False}
            if address is None:
                kw["num_cpus"] = self.workers * self.threads
            kw.update(init_kwargs or {})
            ray.init(address=address, **kw)
            self.own = True
        self._remote = ray.remote(_task)
        self._models: dict = {}

    def close(self) -> None:
        if self.own and self.ray.is_initialized():
            self.ray.shutdown()
        self.own = False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _model_ref(self, models, name):
        if name not in self._models:
            m = models(name) if callable(models) else models[name]
            self._models[name] = self.ray.put(pickle.dumps(m))
        return self._models[name]

    def map(self, points: list[dict], models, fn: Callable = run_point, progress: Callable | None = None) -> list[dict]:
        """One row per point, in order: ``{"index": i, **point, **fn(model, point)}``.
        ``models``: ``{name: Model}`` or a callable ``name -> Model`` (called once per variant,
        here; the model goes to the workers through Ray's object store); a point's ``model`` key
        names its variant.  ``progress(done, total, row)`` after each task."""
        ray = self.ray
        rows: list = [None] * len(points)
        pending = list(range(len(points)))[::-1]
        running: dict = {}  # ref -> (index, start)
        done = 0
        while pending or running:
            while pending and len(running) < self.workers:
                i = pending.pop()
                try:
                    ref = self._remote.options(**task_options(points[i], self.threads, self.max_retries)).remote(
                        fn, self._model_ref(models, points[i]["model"]), points[i], self.threads
                    )
                    running[ref] = (i, time.perf_counter())
                except Exception as e:  # noqa: BLE001 - e.g. a model that does not load: a row
                    rows[i] = _error_row("error", f"{type(e).__name__}: {e}")
                    done += 1
                    if progress:
                        progress(done, len(points), {"index": i, **points[i], **rows[i]})
            if not running:
                continue
            wait_s = None
            if self.timeout:
                oldest = min(s for _, s in running.values())
                wait_s = max(0.05, oldest + self.timeout - time.perf_counter())
            ready, _ = ray.wait(list(running), num_returns=1, timeout=wait_s)
            now = time.perf_counter()
            finished = []
            for ref in ready:
                i, _ = running.pop(ref)
                try:
                    rows[i] = ray.get(ref)
                except Exception as e:  # noqa: BLE001 - every retry died, or a Ray error: a row
                    rows[i] = _error_row("error", _ray_error(e))
                finished.append(i)
            if self.timeout:
                for ref, (i, s) in list(running.items()):
                    if now - s > self.timeout:
                        ray.cancel(ref, force=True)
                        running.pop(ref)
                        rows[i] = _error_row("timeout", f"cancelled after {self.timeout:g} s")
                        finished.append(i)
            for i in finished:
                done += 1
                if progress:
                    progress(done, len(points), {"index": i, **points[i], **rows[i]})
        return [{"index": i, **p, **r} for i, (p, r) in enumerate(zip(points, rows))]


def run_sweep(
    points: list[dict],
    models,
    address: str | None = None,
    workers: int = 2,
    threads: int = 1,
    max_retries: int = 3,
    timeout: float | None = None,
    fn: Callable = run_point,
    progress: Callable | None = None,
    init_kwargs: dict | None = None,
) -> list[dict]:
    """Run ``points`` on Ray (:class:`RaySweep`) and return their rows in order; a local Ray
    started here is shut down before returning."""
    with RaySweep(address, workers, threads, max_retries, timeout, init_kwargs) as rs:
        return rs.map(points, models, fn, progress)
