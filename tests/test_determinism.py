"""Issue #19: reruns are bit-identical (single and batched), and a long soak stays finite with flat
memory.  The soak runs only with ``PBSIM_SOAK_STEPS`` set (e.g. ``PBSIM_SOAK_STEPS=1000000``;
figures in docs/reliability.md)."""

from __future__ import annotations

import os
import resource
import time
import warnings

import numpy as np
import pytest

import pbsim


def gym_xml(name):
    from conftest import gymnasium_xml

    return gymnasium_xml(name)


def same(a, b):
    """Bitwise equality of two trajectories (NaN-safe: compares the bytes)."""
    for f in ("t", "q", "v", "energy"):
        x, y = np.asarray(getattr(a, f)), np.asarray(getattr(b, f))
        assert x.shape == y.shape and x.tobytes() == y.tobytes(), f


@pytest.mark.parametrize("method, dt", [("rk4", 1e-3), ("euler", 1e-3), ("pbad", 1e-2)])
def test_single_rerun_is_bit_identical(method, dt):
    import pbsim_models

    m = pbsim_models.by_name("chain10")
    q0 = pbsim.integrate(m, m.neutral(), np.linspace(-0.3, 0.3, m.nv))
    a = pbsim.rollout(m, method, dt=dt, steps=200, q0=q0)
    b = pbsim.rollout(m, method, dt=dt, steps=200, q0=q0)
    same(a, b)


def test_batched_rerun_is_bit_identical_and_equals_single_runs():
    """A batch of 4 trajectories with contact (the ant on its floor, euler) twice: bitwise
    equal; each row equals the same trajectory run alone."""
    m = pbsim.load(gym_xml("ant.xml"))
    rng = np.random.default_rng(7)
    q0 = np.tile(m.default_configuration(), (4, 1))
    q0[:, 2] += 0.1  # start above the floor
    q0[:, 7:] += rng.uniform(-0.2, 0.2, (4, m.nq - 7))
    kw = dict(dt=5e-4, steps=200, q0=q0, on_nan="stop")
    a = pbsim.rollout(m, "euler", **kw)
    b = pbsim.rollout(m, "euler", **kw)
    same(a, b)
    assert not a.diverged.any()
    one = pbsim.rollout(m, "euler", dt=5e-4, steps=200, q0=q0[2])
    assert one.q.tobytes() == np.ascontiguousarray(a.q[:, 2]).tobytes()


def _rss_mb() -> float:
    """Resident memory now [MB] (Linux /proc; the max RSS where it is absent)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except OSError:  # pragma: no cover
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@pytest.mark.skipif(not os.environ.get("PBSIM_SOAK_STEPS"), reason="set PBSIM_SOAK_STEPS (e.g. 1000000) to soak")
def test_soak_humanoid_on_its_floor():
    """``PBSIM_SOAK_STEPS`` steps of euler (dt 1 ms) on the gymnasium humanoid lying on its MJCF
    floor, in chunks of 10,000 steps: the state stays finite and never diverges, and the
    resident memory after the first chunks stays flat (< 20 MB growth)."""
    total = int(os.environ["PBSIM_SOAK_STEPS"])
    chunk = min(10_000, total)
    m = pbsim.load(gym_xml("humanoid.xml"))
    q, v = m.default_configuration(), np.zeros(m.nv)
    rss, t0, done = [], time.perf_counter(), 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        while done < total:
            n = min(chunk, total - done)
            tr = pbsim.rollout(m, "euler", dt=1e-3, steps=n, q0=q, v0=v, record_every=n, on_nan="raise")
            q, v = tr.q[-1].copy(), tr.v[-1].copy()
            assert np.all(np.isfinite(q)) and np.all(np.isfinite(v))
            done += n
            rss.append(_rss_mb())
            if len(rss) % 10 == 0:  # progress of a long soak (pytest -s)
                print(f"soak: {done} steps, {time.perf_counter() - t0:.0f} s, RSS {rss[-1]:.0f} MB", flush=True)
    wall = time.perf_counter() - t0
    grow = rss[-1] - rss[min(2, len(rss) - 1)]
    print(
        f"soak: {done} steps in {wall:.0f} s ({done / wall:.0f} steps/s), RSS {rss[0]:.0f} -> {rss[-1]:.0f} MB, "
        f"final height {q[2]:.3f} m, |v| max {np.abs(v).max():.3g}"
    )
    assert grow < 20.0, rss
