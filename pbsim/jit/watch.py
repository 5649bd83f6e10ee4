"""First-run compilation: the notice ("compiling kernels for X ...") and its timing."""
from __future__ import annotations

import sys
import time

from numba.core import event as _event


# First-run compile seconds of the common kernels on the 2-core reference machine (cold cache,
# single trajectory; docs/benchmarks.md "First-run compilation"): the estimate in the notice.
COMPILE_ESTIMATE_S = {"euler": 25, "explicit_euler": 23, "rk2": 23, "rk3": 23, "rk4": 23, "pbad": 22,
                      "pbad3": 36, "pbad4": 36, "variational": 36, "variational_newton": 40,
                      "variational_broyden": 40}


class CompileWatch:
    """Time numba compilation inside a block; say so once when it starts.

    Numba raises its ``numba:compile`` event only on a cache miss, so the notice appears exactly
    when kernels are being compiled (the first run on a machine, or after pbsim was changed),
    never on a cached run.  ``seconds`` holds the wall time spent compiling (outermost
    compilations only); callers report it apart from the simulation's own time.

        with CompileWatch("pbad") as cw:
            integ.step(state, ctrl, dt)
        cw.seconds
    """

    def __init__(self, label: str, notice=None, estimate_s: float | None = None):
        self.label = label
        self.notice = notice if notice is not None else _stderr_notice
        self.estimate_s = COMPILE_ESTIMATE_S.get(label.split()[0]) if estimate_s is None else estimate_s
        self.seconds = 0.0
        self.compilations = 0
        self.noticed = False
        self._depth = 0
        self._t0 = 0.0

    def message(self) -> str:
        est = f", ~{self.estimate_s:.0f} s" if self.estimate_s else ""
        return f"pbsim: compiling kernels for {self.label} (first run only{est})..."

    def on_start(self, ev):
        if self._depth == 0:
            self._t0 = time.perf_counter()
            if not self.noticed:
                self.noticed = True
                if self.notice:
                    self.notice(self.message())
        self._depth += 1
        self.compilations += 1

    def on_end(self, ev):
        self._depth -= 1
        if self._depth == 0:
            self.seconds += time.perf_counter() - self._t0

    def __enter__(self):
        self._listener = _Listener(self)
        _event.register("numba:compile", self._listener)
        return self

    def __exit__(self, *exc):
        _event.unregister("numba:compile", self._listener)
        return False


class _Listener(_event.Listener):
    def __init__(self, watch):
        self.watch = watch

    def on_start(self, event):
        self.watch.on_start(event)

    def on_end(self, event):
        self.watch.on_end(event)


def _stderr_notice(msg: str):
    print(msg, file=sys.stderr, flush=True)


