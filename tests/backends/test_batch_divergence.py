"""The batch drivers apply the shared divergence rule (pbsim.integrators.divergence.check_run)."""

import numpy as np
import pbsim_models
import pytest

import pbsim
from pbsim.backends.cpu import CpuBatch


def test_cpubatch_flags_a_finite_blow_up_and_not_a_stable_run():
    m = pbsim_models.chain(3)
    # row 0: explicit PD far too stiff for dt (the amplitude grows ~ dt^2 kp / m per step), finite
    # for a while; row 1: no PD, a chain swinging under gravity
    stiff = pbsim.Control(mode="pd", kp=np.array([[1e6] * 3, [0.0] * 3]), kd=0.0, q_ref=np.zeros(3))  # row 1: no PD
    cb = CpuBatch(m, "euler", batch=2)
    q0 = np.array([[0.1, 0.0, 0.0], [0.0, 0.0, 0.0]])
    cb.set_state(q0)
    cb.set_control(stiff)
    cb.advance(6, 0.05)
    q, v = cb.state()
    assert np.isfinite(q).all() and np.isfinite(v).all()  # finite, yet blown up
    bad, why = cb.diverged()
    assert bad.tolist() == [True, False]
    assert "beyond" in why[0] and why[1] is None
    # the same chain without the stiff PD, swinging under gravity for 1 s: not flagged
    cb2 = CpuBatch(m, "rk4", batch=2)
    cb2.set_state(q0)
    cb2.advance(1000, 1e-3)
    bad2, why2 = cb2.diverged()
    assert not bad2.any() and why2 == [None, None]


def test_rollout_passes_the_cuda_drivers_own_arguments_through():
    """layout / threads / schedule belong to device='cuda' (not integrator options); with
    device='cpu' they stay unknown options (named error)."""
    m = pbsim_models.chain(3)
    with pytest.raises(pbsim.InputError, match="layout"):
        pbsim.rollout(m, "euler", dt=0.01, steps=2, layout="soa")
    import inspect

    from pbsim.rollout_gpu import rollout_cuda

    assert set(pbsim.rollout.__globals__["CUDA_ARGS"]) <= set(inspect.signature(rollout_cuda).parameters)
