"""pbsim.optim.substep on a toy method whose step converges only below a per-trajectory step
size: recursive halving (the pbad3/4 schedule) and 2**levels equal sub-steps (pbad's), counts,
anchors and the diagnostics they add up."""

from dataclasses import dataclass, field

import numpy as np

from pbsim.optim.substep import failed, substep


@dataclass
class S:
    q: np.ndarray
    hmax: np.ndarray  # the largest step each trajectory converges at


@dataclass
class D:
    iterations: np.ndarray
    converged: np.ndarray
    residual: np.ndarray
    energy: np.ndarray
    extra: dict = field(default_factory=dict)


def _attempt(x, h, anchors):
    anchors.append(None)
    ok = h <= x.hmax + 1e-15
    return S(x.q + h, x.hmax), D(
        np.full(len(x.q), 3), ok, np.where(ok, 0.0, 1.0), x.q + h, {"rotation": h * np.ones(len(x.q))}
    )


def _method(x, h, level, anchor, levels, anchors):
    """A method's step at ``level``: one attempt, then its failures as two halves (recursively)."""
    anchors.append((level, anchor))
    new, d = _attempt(x, h, [])
    d.extra["substeps"] = np.ones(len(x.q), int)
    bad = failed(d.converged, level, levels)
    if bad is not None:
        r = substep(
            lambda y, hh, lev, anc: _method(y, hh, lev, anc, levels, anchors),
            S(x.q[bad], x.hmax[bad]),
            h,
            levels,
            level=level,
            anchor=("node", level),
            maxima=("rotation",),
        )
        new.q[bad] = r.state.q
        d.iterations[bad] += r.iterations
        d.converged[bad], d.residual[bad], d.energy[bad] = r.converged, r.residual, r.energy
        d.extra["substeps"][bad] = r.substeps
        d.extra["rotation"][bad] = r.maxima["rotation"]
    return new, d


def test_recursive_halves():
    dt = 1.0
    x = S(np.zeros(4), np.array([1.0, 0.5, 0.25, 0.01]))
    anchors = []
    new, d = _method(x, dt, 0, None, 3, anchors)
    # steps: 1, 2 halves, 4 quarters; the last needs 1/128 > 3 levels: 8 eighths, unconverged
    assert list(d.extra["substeps"]) == [1, 2, 4, 8]
    assert list(d.converged) == [True, True, True, False]
    assert np.allclose(new.q, dt)  # the sub-steps cover the step
    # iterations: 3 per attempt at every level (the failed attempts included)
    assert list(d.iterations) == [3, 3 + 2 * 3, 3 + 2 * 3 + 4 * 3, 3 + 2 * 3 + 4 * 3 + 8 * 3]
    assert np.allclose(d.extra["rotation"], [1.0, 0.5, 0.25, 0.125])  # max over the sub-steps' values
    # anchors: the first half gets the caller's, the second (q at the start of the first, -h)
    lv1 = [a for lev, a in anchors if lev == 1]
    assert lv1[0] == ("node", 0) and lv1[1][1] == -0.5 and np.allclose(lv1[1][0], 0.0)


def test_uniform_substeps_and_nothing_to_do():
    dt = 0.8
    x = S(np.array([1.0, 2.0]), np.array([0.1, 0.3]))
    calls = []

    def plain(y, h, level, anchor):
        calls.append((h, level, anchor is None))
        return _attempt(y, h, [])

    r = substep(plain, x, dt, 3, halves=False)
    assert len(calls) == 8 and all(abs(h - 0.1) < 1e-15 and lev == 3 for h, lev, _ in calls)
    assert calls[0][2] and not calls[1][2]
    assert np.allclose(r.state.q, x.q + dt) and np.allclose(r.start, x.q + 7 * 0.1) and np.isclose(r.h, 0.1)
    assert list(r.substeps) == [8, 8] and list(r.iterations) == [24, 24] and r.converged.all()
    assert failed(np.array([True, True]), 0, 3) is None  # all converged
    assert failed(np.array([True, False]), 3, 3) is None  # no level left
    assert list(failed(np.array([True, False]), 0, 1)) == [False, True]
