"""One compilation per kernel across processes: a file lock around a cached dispatcher's compile.

numba looks a kernel up in its disk cache when a process first calls it with new argument types,
and compiles it on a miss.  Processes that start together (a Ray sweep, ``SubprocVecEnv``
workers, ``pytest -n 2``, CMA-ES over a process pool) all miss at once and each compiles the same
kernel: N processes spend N times the 20-90 s a step kernel takes, on the same cores.
:func:`locked` makes the dispatcher's ``compile`` take an exclusive lock on a file named after the
kernel and its argument types in the cache folder (``locks/``): the first process compiles and saves; the others wait,
then find the kernel in the cache and load it (numba checks the cache inside ``compile``).

Only a thread's outermost locked compile takes a lock (a kernel compiled while another is being
compiled runs unlocked), so a process never waits while holding a lock: two processes cannot
deadlock.  A lock not obtained within ``PBSIM_COMPILE_LOCK_TIMEOUT`` seconds (default 900) is
skipped, and on a system without ``fcntl`` (Windows) nothing is locked.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time

try:
    import fcntl
except ImportError:  # Windows: compile without the lock
    fcntl = None

_HELD = threading.local()


def lock_path(cache_dir: str, disp, sig) -> str:
    """The lock file of dispatcher ``disp`` compiled for argument types ``sig``: its module and
    qualified name, then a hash of both with the types (one lock per build: two kernels of one
    name but other argument types, e.g. one step driver bound to two methods, do not wait for
    each other)."""
    f = disp.py_func
    name = f"{f.__module__}.{f.__qualname__}".replace("<", "").replace(">", "")
    key = hashlib.sha1(f"{name}|{sig}".encode()).hexdigest()[:16]
    return os.path.join(cache_dir, "locks", f"{name[:100]}-{key}.lock")


def _acquire(path: str, timeout: float):
    """An open file holding an exclusive lock on ``path``, or None (no fcntl, no folder, timeout)."""
    if fcntl is None:
        return None
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fh = open(path, "a")  # noqa: SIM115 - held until the compile ends
    except OSError:
        return None
    t_end = time.monotonic() + timeout
    while True:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fh
        except BlockingIOError:
            if time.monotonic() >= t_end:
                fh.close()
                return None
            time.sleep(0.05)
        except OSError:  # a file system without locks
            fh.close()
            return None


def locked(disp, cache_dir: str):
    """``disp`` (a cached numba dispatcher) with its ``compile`` serialised across processes."""
    orig = disp.compile

    def compile(sig):  # noqa: A001 - numba's method name
        if getattr(_HELD, "depth", 0):  # inside another kernel's compile: no second lock
            return orig(sig)
        timeout = float(os.environ.get("PBSIM_COMPILE_LOCK_TIMEOUT", "900"))
        fh = _acquire(lock_path(cache_dir, disp, sig), timeout)
        _HELD.depth = 1
        try:
            return orig(sig)
        finally:
            _HELD.depth = 0
            if fh is not None:
                fh.close()  # closing releases the lock

    disp.compile = compile
    return disp
