"""Equality constraints held by the steps themselves (``Integrator.step``'s kernels, where
test_equality.py runs the rollout kernels): pbad's and pbd_nmdp's penalty and projection, the
explicit steps' CUDA twins.  Models and oracle in test_equality.py; a file of its own so that these
step kernels compile on another test worker than the rollouts there."""

import numpy as np
import pytest
from test_equality import _load, _xml

import pbsim
from pbsim.dynamics.equality import equality_residual
from pbsim.integrators import make

pytest.importorskip("mujoco")


@pytest.mark.parametrize("method", ["pbad", "pbd_nmdp"])
@pytest.mark.parametrize("dt", [0.02, 0.05])
def test_position_based_keep_the_loop_closed(tmp_path, dt, method):
    """pbad and pbd_nmdp hold the constraint as a stiff penalty in their step's objective (kc =
    1e4 M / dt^2 per row, pbsim.dynamics.equality.EQ_PENALTY) and project each step's result onto
    it (two Newton steps in the mass metric): the four-bar swings down for 3 s and stays closed
    to 1e-9 m at 20 and 50 ms (measured 2e-16 m), every step converged, no energy gained."""
    m = _load(tmp_path, "fourbar", _xml("fourbar", 1e-3, "Euler"))
    integ = make(method, m)
    st = pbsim.State.make(m, m.default_configuration())
    e0 = pbsim.energy(m, st.q[0], st.v[0]).sum()
    viol, q1, en = [], [], []
    for _ in range(int(round(3.0 / dt))):
        st, diag = integ.step(st, None, dt)
        assert diag.converged.all()
        viol.append(np.abs(equality_residual(m, st.q[0])[0]).max())
        q1.append(st.q[0, 0])
        en.append(pbsim.energy(m, st.q[0], st.v[0]).sum())
    assert max(viol) < 1e-9, max(viol)
    assert np.ptp(q1) > 1.0  # it swung
    assert max(en) <= e0 + 1e-9


def test_cuda_twins_equal_cpu(tmp_path):
    """The explicit steps' CUDA twins (under numba's simulator) give the CPU's states with the
    constraints held (four-bar, weld; euler, rk4; one start off the constraint), and MuJoCo's limit
    rows (tendon ranges, a ball cone) the same."""
    from pathlib import Path

    from conftest import run_cudasim_twin

    diffs, out = run_cudasim_twin(Path(__file__).parent / "_cudasim_equality.py", tmp_path / "cpu.npz")
    assert len(diffs) == 18 and max(diffs.values()) < 1e-12, out
