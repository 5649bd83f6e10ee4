"""The device memory of a CUDA batch: what it allocates per trajectory, and chunks that fit."""
from __future__ import annotations

import os

import numpy as np

from pbsim.backends.cuda_device import DEFAULT_TPB, DeviceError, _is_namedtuple, require_cuda, simulated


class DeviceMemoryError(DeviceError):
    """Even the smallest chunk of a batch does not fit in the GPU's free memory."""


MEMORY_NOTICE_BYTES = 256 * 2**20  # CudaBatch says how much it allocates from this size on
MEMORY_RESERVE = 0.1  # part of the free memory left to the driver, the kernels' stacks and others


def _nbytes(obj) -> int:
    if isinstance(obj, np.ndarray):
        return int(obj.nbytes) if obj.ndim else 0
    if _is_namedtuple(obj):
        return sum(_nbytes(a) for a in obj)
    return 0


def memory_estimate(model, integrator: str = "euler", scene=None, control=None, batch: int | None = None,
                    **options) -> tuple[int, int]:
    """``(bytes per trajectory, shared bytes)`` a :class:`CudaBatch` allocates on the device: the
    batched workspaces, method scratch, state buffers and frames per trajectory (the difference
    between a batch of 2 and a batch of 1); the model, scene and control arrays (``control`` for
    ``batch`` trajectories, when given) once."""
    from pbsim.contact.scene import Scene
    from pbsim.control.control import default_control
    from pbsim.control.stepwork import make_step_work
    from pbsim.dynamics.workspace import make_work
    from pbsim.integrators.base import make_batched

    scene = scene if scene is not None else Scene()
    integ, spec = make_batched(integrator, model, scene, options, "device='cuda'")
    spec = _instance_spec(integ, spec)

    def total(B):
        state = 2 * B * (model.nq + model.nv) + B * (model.nq + model.nv + 2)  # q, v, qn, vn; frames
        return (8 * state + _nbytes(make_work(model, B)) + _nbytes(make_step_work(model, B))
                + _nbytes(spec.make_extra(integ, B)) + _nbytes(model.k) + _nbytes(scene.kernel_arrays(model)))

    one, two = total(1), total(2)
    kc = (control if control is not None else default_control(model)).kernel_arrays(model, 1 if batch is None else int(batch))
    return two - one, max(one - (two - one), 0) + _nbytes(kc)


def plan_chunks(batch: int, per_trajectory: int, shared: int, free: int, reserve: float = MEMORY_RESERVE,
                align: int = DEFAULT_TPB) -> list[tuple[int, int]]:
    """Split ``batch`` trajectories into ``[(start, stop), ...]`` chunks that each fit in
    ``free`` bytes of device memory (less ``reserve`` of it, less ``shared``), chunks a multiple
    of ``align`` (whole blocks) when they can be.  One chunk when everything fits;
    :class:`DeviceMemoryError` when not even one trajectory does."""
    batch, per_trajectory = int(batch), max(int(per_trajectory), 1)
    usable = int(free * (1.0 - reserve)) - int(shared)
    n = usable // per_trajectory if usable > 0 else 0
    if n < 1:
        raise DeviceMemoryError(
            f"one trajectory needs {per_trajectory:,} bytes on the GPU (+ {shared:,} shared) but only "
            f"{free:,} bytes are free ({reserve:.0%} kept in reserve); free GPU memory, use a smaller "
            "model, or run on device='cpu'")
    if n >= batch:
        return [(0, batch)]
    if n >= align:
        n -= n % align
    return [(i, min(i + n, batch)) for i in range(0, batch, n)]


def free_memory() -> int:
    """Free bytes on the current GPU (``$PBSIM_CUDA_FREE_BYTES`` overrides it: tests, simulator)."""
    env = os.environ.get("PBSIM_CUDA_FREE_BYTES")
    if env:
        return int(float(env))
    if simulated():
        return 1 << 62
    cuda_mod = require_cuda()
    return int(cuda_mod.current_context().get_memory_info()[0])


def _gib(n) -> str:
    return f"{n / 2**30:.2f} GiB" if n >= 2**28 else f"{n / 2**20:.1f} MiB"


def _instance_spec(integ, spec):
    """The integrator instance's own StepSpec when it picks its kernel by option (pbfd's LBFGS)."""
    from pbsim.integrators.base import StepSpec

    st = getattr(integ, "STEP", None)
    return st if isinstance(st, StepSpec) else spec
