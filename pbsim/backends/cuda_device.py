"""The CUDA device: whether it is usable, device arrays in the AoS/SoA layouts, and kernel launch."""
from __future__ import annotations

import os

import numpy as np

from pbsim.errors import InputError, PbsimError


class DeviceError(PbsimError, RuntimeError):
    """The requested compute device is not usable (no GPU, no driver, no numba-cuda)."""


INSTALL_HINT = 'install the GPU extra: pip install "numba-cuda>=0.30" (numpy<2.5)'
LAYOUTS = ("aos", "soa")
# layout="auto": SoA from this batch size on, except for the methods in AUTO_AOS_METHODS.  Measured
# on the H200 (docs/benchmarks/gpu.md, gymnasium humanoid + floor and contact between bodies, fp64):
# euler SoA/AoS 1.32x at B = 2,048, 1.18x at 4,096, 1.13x at 8,192, 1.39x at 65,536 (floor only:
# 1.52x at 16,384, 2.0x at 65,536); pbfd 1.57x at 16,384, 1.29x at 65,536.  pbad: 1.0x at 16,384 and
# 0.93x at 65,536 (floor only), so it stays AoS (fourth run, bodies: 1.22x at 16,384, 0.64x at
# 65,536).  nmdp (floor only, fourth run): SoA/AoS 0.77x at 4,096, 0.80x at 16,384, so the PGM forms
# (one step kernel, pgm_step) stay AoS.  Below 2,048 nothing was measured (the GPU is not filled; one
# compile, AoS, serves small runs).
AUTO_SOA_MIN_BATCH = 2048
AUTO_AOS_METHODS = ("pbad", "nmdp", "nmdp_zo", "pbd_nmdp", "pbd_nmdp_zo")
# threads per block: 128.  Measured on the H200 (docs/benchmarks/gpu.md, humanoid with contact between
# bodies): euler SoA 64k 14.9 M at 128 against 16.9 M (64) and 18.1 M (256); pbad AoS 16k / 64k 418 k /
# 593 k at 128, 419 k / 463 k (64), 305 k / 482 k (256); pbfd SoA 16k / 64k 364 k / 331 k at 128,
# 361 k / 395 k (64), 252 k / 338 k (256).  No value wins for every method; 128 is within 16 % of the
# best row of the implicit methods.  PBSIM_CUDA_TPB or threads= overrides it.
DEFAULT_TPB = 128


def resolve_layout(layout: str, batch: int, integrator: str | None = None) -> str:
    """``"aos"``/``"soa"``; ``"auto"`` is SoA for ``batch >= AUTO_SOA_MIN_BATCH``, else AoS (and AoS
    for the methods of ``AUTO_AOS_METHODS``)."""
    if layout == "auto":
        if integrator in AUTO_AOS_METHODS:
            return "aos"
        return "soa" if int(batch) >= AUTO_SOA_MIN_BATCH else "aos"
    if layout not in LAYOUTS:
        raise InputError(f"layout must be one of {LAYOUTS + ('auto',)}, got {layout!r}")
    return layout


def simulated() -> bool:
    """True when numba's CUDA simulator is on (``NUMBA_ENABLE_CUDASIM=1``)."""
    return os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")


_STATUS: tuple[bool, str] | None = None


def device_status() -> tuple[bool, str]:
    """``(usable, description)``: the GPU's name, or why there is none.  Never raises."""
    global _STATUS
    if _STATUS is not None:
        return _STATUS
    try:
        from numba import cuda
    except Exception as e:  # noqa: BLE001 - any import failure means "no numba-cuda"
        _STATUS = (False, f"numba-cuda is not importable ({type(e).__name__}: {e}); {INSTALL_HINT}")
        return _STATUS
    if simulated():
        _STATUS = (True, "numba CUDA simulator (NUMBA_ENABLE_CUDASIM=1, runs on the CPU)")
        return _STATUS
    try:
        ok = bool(cuda.is_available())
    except Exception as e:  # noqa: BLE001
        ok, why = False, f"{type(e).__name__}: {e}"
    else:
        why = "no CUDA driver or no NVIDIA GPU found"
    if not ok:
        _STATUS = (False, f"no usable CUDA GPU ({why}); run on a machine with an NVIDIA GPU, "
                          "use device='cpu', or set NUMBA_ENABLE_CUDASIM=1 to simulate (slow)")
        return _STATUS
    try:
        dev = cuda.get_current_device()
        name = dev.name.decode() if isinstance(dev.name, bytes) else str(dev.name)
        cc = ".".join(map(str, dev.compute_capability))
        _STATUS = (True, f"{name} (compute capability {cc})")
    except Exception as e:  # noqa: BLE001
        _STATUS = (False, f"CUDA GPU found but unusable ({type(e).__name__}: {e})")
    return _STATUS


def available() -> bool:
    return device_status()[0]


def device_name() -> str:
    return device_status()[1]


def require_cuda():
    """The ``numba.cuda`` module, or :class:`DeviceError` saying why it cannot be used."""
    ok, msg = device_status()
    if not ok:
        raise DeviceError(f"device='cuda' is not available: {msg}")
    from numba import cuda

    return cuda


# ---------------------------------------------------------------------------- device arrays
def _is_dev(a) -> bool:
    return hasattr(a, "copy_to_host") or hasattr(a, "__cuda_array_interface__")


_HOST_ARRAYS = False  # offline builds (no GPU): "device" arrays are host arrays with the device strides


def _host_mode() -> bool:
    return simulated() or _HOST_ARRAYS


def dev_empty(shape, layout: str = "aos", dtype=np.float64):
    """A device array of logical shape ``shape`` (batch axis first) in ``layout``.

    Under the simulator (and in offline builds) a device array is a plain numpy array with the
    same strides."""
    cuda = None if _HOST_ARRAYS else require_cuda()
    shape = tuple(int(s) for s in shape)
    if layout not in LAYOUTS:
        raise InputError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    # an empty array is stored C-contiguous in both layouts: its contiguity flags (and so its numba
    # type, hence the kernel's signature and cache key) would otherwise depend on the batch size
    soa = layout == "soa" and len(shape) > 1 and 0 not in shape
    phys = shape[1:] + shape[:1] if soa else shape  # batch axis last = fastest in memory
    if _host_mode():
        buf = np.zeros(phys, dtype)
        return np.moveaxis(buf, -1, 0) if soa else buf
    base = cuda.device_array(phys, dtype=dtype)
    if not soa:
        return base
    from numba.cuda.cudadrv.devicearray import DeviceNDArray

    strides = (base.strides[-1],) + tuple(base.strides[:-1])
    view = DeviceNDArray(shape, strides, np.dtype(dtype), gpu_data=base.gpu_data)
    view._pbsim_base = base  # keep the allocation (and its physical shape) reachable
    return view


def dev_put(host, layout: str = "aos", out=None):
    """Copy host array ``host`` (batch axis first) to the device (into ``out`` if given)."""
    host = np.asarray(host)
    d = dev_empty(host.shape, layout, host.dtype) if out is None else out
    if _host_mode():
        d[...] = host
        return d
    if host.size == 0:
        return d
    base = getattr(d, "_pbsim_base", None)
    if base is None:
        d.copy_to_device(np.ascontiguousarray(host))
    else:
        base.copy_to_device(np.ascontiguousarray(np.moveaxis(host, 0, -1)))
    return d


def dev_get(d) -> np.ndarray:
    """Copy a device array back to the host (C-contiguous, batch axis first)."""
    if isinstance(d, np.ndarray):
        return np.array(d)
    base = getattr(d, "_pbsim_base", None)
    if base is None:
        return d.copy_to_host()
    return np.ascontiguousarray(np.moveaxis(base.copy_to_host(), -1, 0))


def tuple_to_device(nt, layout: str = "aos", batched: bool = False):
    """A namedtuple with every numpy array copied to the device (scalars stay).

    ``batched``: arrays have a leading batch axis and follow ``layout``; otherwise (model,
    scene, tableau: shared by all threads) they are stored C-contiguous."""
    vals = []
    for x in nt:
        if isinstance(x, np.ndarray):
            if x.ndim == 0:
                vals.append(x.item())
            else:
                vals.append(dev_put(x, layout if batched else "aos"))
        else:
            vals.append(x)
    return type(nt)(*vals)


def zeros_like_tuple(nt, layout: str = "aos"):
    """Device zeros with the shapes of a batched workspace namedtuple."""
    return type(nt)(*(dev_put(np.zeros(x.shape, x.dtype), layout) for x in nt))


def _is_namedtuple(a) -> bool:
    return isinstance(a, tuple) and hasattr(a, "_fields")


def _extra_to_device(x, batched, layout):
    vals = []
    for f, a in zip(x._fields, x):
        if isinstance(a, np.ndarray):
            vals.append(dev_put(a, layout if f in batched else "aos"))
        elif _is_namedtuple(a):
            vals.append(tuple_to_device(a, layout, batched=f in batched))
        else:
            vals.append(a)
    return type(x)(*vals)



def threads_per_block() -> int:
    return int(os.environ.get("PBSIM_CUDA_TPB", str(DEFAULT_TPB)))



def launch(kern, B: int, *args, tpb: int | None = None):
    """Launch ``kern`` with one thread per trajectory."""
    tpb = tpb or threads_per_block()
    if simulated():
        tpb = min(tpb, max(B, 1))  # the simulator runs every thread; no need for idle ones
        from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray

        # our simulated device arrays are numpy arrays (maybe strided): pass them without the
        # simulator's copy-in/copy-out (which also refuses non-contiguous buffers)
        args = tuple(FakeCUDAArray(a) if isinstance(a, np.ndarray) else a for a in args)
    kern[(B + tpb - 1) // tpb, tpb](*args)
