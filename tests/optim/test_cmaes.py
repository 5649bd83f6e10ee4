"""pbsim.optim.cmaes: a few generations improve a small objective; failures and maximisation."""

import numpy as np
import pytest

pytest.importorskip("cma")

from pbsim.errors import InputError  # noqa: E402
from pbsim.optim.cmaes import cmaes  # noqa: E402


def test_cmaes_improves_a_shifted_sphere(tmp_path):
    calls = []

    def f(X):
        calls.append(X.shape)
        return ((X - 1.0) ** 2).sum(axis=1)

    x0 = np.zeros(4)
    r = cmaes(f, x0, sigma0=0.5, generations=3, popsize=8, seed=3)
    assert calls == [(8, 4)] * 3  # the whole population per call
    assert r.f < f(x0[None])[0] and np.isclose(r.f, f(r.x[None])[0])
    assert len(r.history["best"]) == 3 and r.history["evaluations"][-1] == 24
    assert np.all(np.diff(r.history["best_so_far"]) <= 0)
    r2 = cmaes(f, x0, sigma0=0.5, generations=3, popsize=8, seed=3)
    np.testing.assert_array_equal(r.x, r2.x)  # a seed repeats the run
    r.save(tmp_path / "best.npz")
    assert np.load(tmp_path / "best.npz")["x"].shape == (4,)


def test_cmaes_maximises_and_skips_failures():
    def g(X):
        v = -((X - 0.5) ** 2).sum(axis=1)
        v[0] = np.nan  # a diverged rollout
        return v

    r = cmaes(g, np.zeros(3), sigma0=0.3, generations=4, popsize=6, maximize=True, seed=1)
    assert np.isfinite(r.f) and r.f > g(np.zeros((2, 3)))[1]
    assert r.history["failed"].tolist() == [1, 1, 1, 1]
    with pytest.raises(InputError):
        cmaes(g, np.zeros(1))
