"""CUDA backend: the CPU kernels' own source, compiled as numba-cuda device functions, one
thread per trajectory.

Nothing here imports ``numba.cuda`` until a GPU is asked for (:func:`require_cuda`), so the CPU
path never needs numba-cuda.  Without a GPU (or without numba-cuda) every entry point raises
:class:`DeviceError` with a one-line reason, never a traceback from inside numba.  Under
``NUMBA_ENABLE_CUDASIM=1`` (numba's CUDA simulator, set before numba.cuda is first imported) the
same kernels run as Python on the CPU: that is how CI checks them.

Layout (``layout=``): every workspace/state array keeps the kernels' logical shape with the
batch axis first, ``(B, ...)``.  ``"aos"`` stores it C-contiguous (trajectory b's scratch is
one block); ``"soa"`` stores the batch axis *fastest* (strides ``(8, ...)``), so that the 32
threads of a warp touching ``w.IA[b, i, r, c]`` for consecutive ``b`` read consecutive words
(coalesced).  The kernels do not change: numba compiles strided ('A' layout) indexing.  The
default ``"auto"`` takes SoA from ``AUTO_SOA_MIN_BATCH`` trajectories on, except for pbad
(``AUTO_AOS_METHODS``), as measured on an H200 (docs/benchmarks/gpu.md).

Compilation: the step kernels are built with ``lto=False`` (numba-cuda turns LTO on whenever
nvJitLink is present; pbsim links no external code, so it only cost a second optimisation) and
with the device functions of :data:`pbsim.jit.CUDA_NOINLINE_DEFAULT` kept out of
line, except in the explicit methods' kernels, which are compiled fully inlined
(:func:`step_noinline`: faster on the device, and their compile stays short); only the
features a run uses are compiled (the CPU's :class:`~pbsim.jit.Variants`).
The compiled code (cubin and PTX per compute capability) is kept on disk under
``$PBSIM_CACHE_DIR/cuda`` (else ``~/.cache/pbsim/cuda``) by :class:`StepKernelCache`, so a second
process loads it instead of compiling (``pbsim warmup --device cuda`` fills it).

This module holds the batch driver (:class:`CudaBatch`, the build a run picks, :func:`build_offline`)
and offers every name of the backend; its parts live beside it: :mod:`~pbsim.backends.cuda_device`
(device status, arrays, launch), :mod:`~pbsim.backends.cuda_kernels` (the kernels and their
compilation), :mod:`~pbsim.backends.cuda_cache` (compile options, cache key, disk cache) and
:mod:`~pbsim.backends.cuda_memory` (memory estimate, chunks).
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import sys
import time

import numpy as np

from pbsim.backends import cuda_device as _dev
from pbsim.backends import cuda_kernels as _kern
from pbsim.backends.cuda_cache import (CACHE_FORMAT, CUDA_COMPILE_ESTIMATE_S, EXTRA_NOINLINE, INLINE_ALL_MODULES, JIT_OPTIONS,
                                       StepKernelCache, _cache_ident, _lib_cc, cache_key, key_digest, step_noinline,
                                       toolchain_versions)
from pbsim.backends.cuda_device import (AUTO_AOS_METHODS, AUTO_SOA_MIN_BATCH, DEFAULT_TPB, INSTALL_HINT, LAYOUTS,
                                        DeviceError, _extra_to_device, available, dev_empty, dev_get,
                                        dev_put, device_name, device_status, launch, require_cuda, resolve_layout,
                                        simulated, threads_per_block, tuple_to_device, zeros_like_tuple)
from pbsim.backends.cuda_kernels import (Kernels, _phase_k, _specialize, _steps_k, compile_ptx, kernels,
                                         toolkit_missing)
from pbsim.backends.cuda_memory import (MEMORY_NOTICE_BYTES, MEMORY_RESERVE, DeviceMemoryError, _gib, _instance_spec,
                                        _nbytes, free_memory, memory_estimate, plan_chunks)
from pbsim.errors import InputError, PbsimError, check_dt

# the names this module has always offered (its parts now live in the cuda_* modules beside it);
# the kernels' late-bound globals (``cuda``, ``_fk`` ...) are read from :mod:`pbsim.backends.cuda_kernels`,
# the offline flag ``_HOST_ARRAYS`` from :mod:`pbsim.backends.cuda_device`, the toolchain versions
# ``_VERSIONS`` and the first-run ``NOTICE`` from :mod:`pbsim.backends.cuda_cache`
__all__ = ["AUTO_AOS_METHODS", "AUTO_SOA_MIN_BATCH", "CACHE_FORMAT", "CUDA_COMPILE_ESTIMATE_S", "CUDA_REFUSED",
           "CUDA_UNVERIFIED",
           "DEFAULT_TPB", "EXTRA_NOINLINE", "INLINE_ALL_MODULES", "INSTALL_HINT", "JIT_OPTIONS", "LAYOUTS", "MEMORY_NOTICE_BYTES",
           "MEMORY_RESERVE", "CudaBatch", "DeviceError", "DeviceMemoryError", "Kernels", "PbsimError",
           "StepKernelCache", "aba", "available", "build_offline", "cache_key", "compile_ptx", "crba", "dev_empty",
           "dev_get", "dev_put", "device_name", "device_status", "fk", "free_memory", "kernels", "key_digest",
           "launch", "memory_estimate", "plan_chunks", "require_cuda", "resolve_layout", "rnea", "simulated",
           "step_noinline", "supported_integrators", "threads_per_block", "toolchain_versions", "toolkit_missing",
           "tuple_to_device", "zeros_like_tuple",
           # private, used by the tests and tools
           "_Plan", "_cache_ident", "_features_used", "_gib", "_nbytes", "_phase_k", "_steps_k", "_variant_step"]


@contextlib.contextmanager
def _offline(cc):
    """Build for compute capability ``cc`` with no GPU: numba-cuda asks the current device for its
    compute capability (typing, code libraries); here it gets ``cc``, and "device" arrays are host
    arrays with the device strides (their numba types are the device arrays')."""
    import numba.cuda.codegen as cg
    import numba.cuda.dispatcher as cdisp
    from numba import cuda as cuda_mod

    class _Dev:
        compute_capability = tuple(int(c) for c in cc[:2])
        id = 0

    lc = _lib_cc(cc)
    saved = cdisp.get_current_device, cg.CUDACodeLibrary._ensure_cc, _dev._HOST_ARRAYS
    cdisp.get_current_device = lambda: _Dev()
    cg.CUDACodeLibrary._ensure_cc = lambda self, c: lc if c is None else c
    _dev._HOST_ARRAYS = True
    _kern._bind_twins(cuda_mod)
    try:
        yield
    finally:
        cdisp.get_current_device, cg.CUDACodeLibrary._ensure_cc, _dev._HOST_ARRAYS = saved


def build_offline(model, integrator: str = "euler", layout: str = "aos", cc=(9, 0), scene=None, control=None,
                  batch: int = 4, phase: str = "steps", features=None, **options) -> dict:
    """Build (or load from the disk cache) the step kernel ``CudaBatch`` would launch, for compute
    capability ``cc``, without a GPU: typing and lowering, NVVM to PTX, then nvJitLink (ptxas) to
    a cubin, stored like a GPU build's (``pbsim warmup --device cuda --cc 9.0``, the tests, the
    compile benchmark).  Needs numba-cuda's toolkit wheels (``numba-cuda[cu12]``).
    ``features``: None, the run's :class:`~pbsim.jit.Variants` features (from the
    control and scene as ``CudaBatch`` picks them), or "all" (every feature compiled).
    Returns ``{"hit", "seconds", "path", "key", "ptx_chars", "cubin_bytes", "cubin_sha", "kernel"}``."""
    import numba

    if simulated():
        raise DeviceError("build_offline needs the real CUDA target; unset NUMBA_ENABLE_CUDASIM")
    missing = toolkit_missing()
    if missing:
        raise DeviceError(f"the CUDA toolkit libraries are missing: {missing}; "
                          'pip install "numba-cuda[cu12]" or install a CUDA toolkit')
    from numba.cuda.dispatcher import _Kernel

    t0 = time.perf_counter()
    with _offline(cc):
        plan = _Plan(model, integrator, scene, batch, resolve_layout(layout, batch, integrator), options)
        plan.set_control(control, features)
        args = plan.args(phase)
        disp = plan.kernel(phase)
        argtypes = tuple(numba.typeof(a) for a in args)
        cache = disp._cache
        kern = cache.load_overload(argtypes, cc=cc)
        hit = kern is not None
        if not hit:
            kern = _Kernel(disp.py_func, argtypes, **disp.targetoptions)
            kern.library.get_cubin(_lib_cc(cc))
            cache.save_overload(argtypes, kern, cc=cc)
        lib = kern.library
        lc = _lib_cc(cc)
        cubin = lib._cubin_cache[lc]
        cubin = bytes(getattr(cubin, "code", cubin))
        key = cache_key(cache.ident, argtypes, cc)
        return {"hit": hit, "seconds": time.perf_counter() - t0, "path": cache.path(key), "key": key,
                "ptx_chars": sum(len(p) for p in lib._ptx_cache.get(lc, [])), "cubin_bytes": len(cubin),
                "cubin_sha": hashlib.sha256(cubin).hexdigest()[:16], "kernel": kern,
                "linker_log": lib._linkerinfo_cache.get(lc, "")}



# ---------------------------------------------------------------------------- dynamics (tests, tools)
def _work(model, B, layout):
    from pbsim.dynamics.workspace import make_work

    return zeros_like_tuple(make_work(model, B), layout)


def _batch(x, n, name, B=None):
    from pbsim.dynamics.api import as_batch

    return as_batch(x, n, name, B)[0]


def fk(model, q, layout="aos"):
    """World poses (Rw (B, nb, 3, 3), pw (B, nb, 3)) computed on the device."""
    K = kernels()
    Q = _batch(q, model.nq, "q")
    B = Q.shape[0]
    w = _work(model, B, layout)
    launch(K.fk, B, tuple_to_device(model.k), w, dev_put(Q, layout))
    return dev_get(w.Rw), dev_get(w.pw)


def rnea(model, q, v, qdd, layout="aos"):
    K = kernels()
    Q = _batch(q, model.nq, "q")
    B = Q.shape[0]
    V, A = _batch(v, model.nv, "v", B), _batch(qdd, model.nv, "qdd", B)
    tau = dev_empty((B, model.nv), layout)
    launch(K.rnea, B, tuple_to_device(model.k), _work(model, B, layout), dev_put(Q, layout), dev_put(V, layout),
           dev_put(A, layout), tau)
    return dev_get(tau)


def crba(model, q, layout="aos"):
    K = kernels()
    Q = _batch(q, model.nq, "q")
    B = Q.shape[0]
    M = dev_empty((B, model.nv, model.nv), layout)
    launch(K.crba, B, tuple_to_device(model.k), _work(model, B, layout), dev_put(Q, layout), M)
    return dev_get(M)


def aba(model, q, v, tau, layout="aos"):
    K = kernels()
    Q = _batch(q, model.nq, "q")
    B = Q.shape[0]
    V, T = _batch(v, model.nv, "v", B), _batch(tau, model.nv, "tau", B)
    qdd = dev_empty((B, model.nv), layout)
    launch(K.aba, B, tuple_to_device(model.k), _work(model, B, layout), dev_put(Q, layout), dev_put(V, layout),
           dev_put(T, layout), dev_put(np.zeros(model.nv)), qdd)
    return dev_get(qdd)


# ---------------------------------------------------------------------------- batched simulation
# Methods with a step kernel that device='cuda' refuses, and why (every other one runs:
# tests/backends/test_cuda_methods.py steps each under the CUDA simulator).
CUDA_REFUSED: dict[str, str] = {}
# Methods refused on a real GPU only (they run under the CUDA simulator, where they equal the CPU to
# the last bit), and why.  ``$PBSIM_CUDA_ALLOW`` (comma-separated names) runs them anyway, to diagnose.
CUDA_UNVERIFIED: dict[str, str] = {
    "ne_dry": "on an H200 (2026-11-28) 8 of gymnasium's humanoids on its floor ended 20 steps of 20 ms 2.2e-2 "
              "rad from the CPU's ne_dry (every other method within 8.1e-11; the CUDA simulator and CpuBatch equal "
              "the CPU to the last bit, and the CPU run moves 1.1e-9 for a 1e-10 change of the start), so its "
              "device build is not trusted until that is explained (docs/benchmarks/gpu.md, fourth run); "
              "CpuBatch runs it, or set PBSIM_CUDA_ALLOW=ne_dry to run it on the GPU anyway",
}


def _refuse_unverified(integrator: str) -> None:
    """InputError for a method of :data:`CUDA_UNVERIFIED` on a real GPU, unless ``$PBSIM_CUDA_ALLOW`` names it."""
    allow = {n.strip() for n in os.environ.get("PBSIM_CUDA_ALLOW", "").split(",")}
    if integrator in CUDA_UNVERIFIED and not simulated() and integrator not in allow:
        raise InputError(f"integrator {integrator!r} is refused on the GPU: {CUDA_UNVERIFIED[integrator]}")


def _features_used(spec, integ, kc, ks):
    """The sorted names of the :class:`~pbsim.jit.Variants` features a run uses (as the CPU batch
    driver picks them: the model's and the method's, ``StepSpec.variant``)."""
    features, used = spec.variant(integ, kc, ks)
    return tuple(sorted(k for k in features if used.get(k, True)))


def _variant_step(spec, step, features):
    """``step`` with the kernels of the features not in ``features`` swapped for no-ops: the
    very copy the CPU's batch driver compiles for that feature set (same names)."""
    if features is None:
        return step
    from pbsim.integrators.driver import driver, steps_batch

    used = {k: k in features for k in spec.all_features}  # exact: the CUDA cache is keyed on the feature set
    return driver(steps_batch, step, spec.all_features, used, reuse=False).py_func.__globals__["_step"]


class _Compiled:
    """The CUDA kernels of one :class:`~pbsim.integrators.base.StepSpec`: the generic drivers
    ``_steps_k`` / ``_phase_k`` bound to its step (and per-launch phase) kernels, one per layout
    and feature set, built once per process and kept on disk (:class:`StepKernelCache`)."""

    _cache: dict = {}

    @classmethod
    def get(cls, spec, which, layout="aos", features=None):
        key = (id(spec.step), which, layout, features)
        if key not in cls._cache:
            if which == "steps":
                k, pyfn = spec.step, _steps_k
            else:
                begin, iterate, end, _ = spec.per_launch
                k, pyfn = {"begin": begin, "iterate": iterate, "end": end}[which], _phase_k
            k = _variant_step(spec, k, features)
            cls._cache[key] = _specialize(pyfn, k, _cache_ident(pyfn, k, which, features, layout))
        return cls._cache[key]


def supported_integrators() -> list[str]:
    """Integrators with a step kernel (and so a device path)."""
    from pbsim.integrators import available, step_spec

    return [n for n in available() if step_spec(n) is not None and n not in CUDA_REFUSED]


class _Plan:
    """The device buffers of a batch and the kernels that run it (what :class:`CudaBatch`
    launches; :func:`build_offline` builds the same kernels for the same argument types)."""

    def __init__(self, model, integrator, scene, batch, layout, options):
        from pbsim.contact.scene import Scene
        from pbsim.control.stepwork import make_step_work
        from pbsim.dynamics.workspace import make_work
        from pbsim.integrators.base import make_batched

        if integrator in CUDA_REFUSED:
            raise InputError(f"integrator {integrator!r} does not run on device='cuda': {CUDA_REFUSED[integrator]}")
        scene = scene if scene is not None else Scene()
        I, spec = make_batched(integrator, model, scene, options, "device='cuda'")
        self.I, self.spec = I, _instance_spec(I, spec)
        self.model, self.integrator, self.layout = model, integrator, layout
        self.B = B = int(batch)
        if B < 1:
            raise InputError(f"batch must be >= 1, got {batch}")
        self.ks = scene.kernel_arrays(model)
        self.m = tuple_to_device(model.k)
        self.s = tuple_to_device(self.ks)
        self.w = zeros_like_tuple(make_work(model, B), layout)
        sw = make_step_work(model, B)
        if layout == "soa" and sw.Md.shape[1:] == (1, 1):
            # no dense SPD scratch (it would exceed 64 MiB): a (B, 1, 1) array in SoA is contiguous,
            # so numba would type it 'C' where the dense (B, nv, nv) one is 'A', and the kernel's
            # signature (and cache entry) would change with the batch size.  (B, 2, 2) keeps the
            # type; the kernels still see no dense scratch for nv > 2 (Md.shape[1] < nv).
            sw = sw._replace(Md=np.zeros((B, 2, 2)))
        self.sw = zeros_like_tuple(sw, layout)
        self.x = _extra_to_device(self.spec.make_extra(I, B), self.spec.batched, layout)
        self.q = dev_empty((B, model.nq), layout)
        self.v = dev_empty((B, model.nv), layout)
        self.qn = dev_empty((B, model.nq), layout)
        self.vn = dev_empty((B, model.nv), layout)
        self.c = None
        self.features = None

    def set_control(self, control, features=None):
        """Upload a :class:`pbsim.Control` (constant over the following :meth:`advance` calls);
        it also picks the kernel build (the features it uses, like the CPU batch driver)."""
        from pbsim.control.control import Control, default_control

        if control is None:
            control = default_control(self.model)
        if not isinstance(control, Control):
            raise InputError("device='cuda' takes a pbsim.Control (constant per launch); a callable control "
                             f"would need the state on the host every step (got {type(control).__name__})")
        kc = control.kernel_arrays(self.model, self.B)
        self.c = tuple_to_device(kc)
        if features == "all":
            self.features = None
        elif features is not None:
            self.features = tuple(sorted(features))
        else:
            self.features = _features_used(self.spec, self.I, kc, self.ks)

    def args(self, phase="steps", dt=0.01, nsteps=1):
        a = (self.m, self.s, self.c, self.w, self.sw, self.x, self.q, self.v, self.qn, self.vn, float(dt))
        return a + (int(nsteps),) if phase == "steps" else a

    def kernel(self, phase="steps"):
        return _Compiled.get(self.spec, phase, self.layout, self.features)


class CudaBatch(_Plan):
    """A batch of ``B`` trajectories living on the GPU.

    The state, the workspaces, the model/scene/control arrays are uploaded once; :meth:`advance`
    runs ``n`` steps in one launch (the state never leaves the device); :meth:`state` /
    :meth:`record` copy back only what is asked for.  ``schedule``: "kernel" (whole steps, the
    solver loop inside the kernel) or "launch" (one solver iteration per launch, for steppers
    registered with ``per_launch``).  ``layout``: "aos", "soa" or "auto" (SoA from
    ``AUTO_SOA_MIN_BATCH`` trajectories on); ``threads``: threads per block (default
    ``DEFAULT_TPB``, or ``$PBSIM_CUDA_TPB``).

    From ``MEMORY_NOTICE_BYTES`` of device memory on, the allocation is said on stderr (bytes per
    trajectory x B); a batch that does not fit in the GPU's free memory is a
    :class:`DeviceMemoryError` naming the largest batch that fits (``pbsim.rollout(...,
    device="cuda")`` runs such a batch in chunks).
    """

    def __init__(self, model, integrator: str = "euler", scene=None, batch: int = 1, layout: str = "auto",
                 threads: int | None = None, schedule: str = "kernel", poll: int = 4, **options):
        B = int(batch)
        if B < 1:
            raise InputError(f"batch must be >= 1, got {batch}")
        layout = resolve_layout(layout, B, integrator)
        if schedule not in ("kernel", "launch"):
            raise InputError(f"schedule must be 'kernel' or 'launch', got {schedule!r}")
        _refuse_unverified(integrator)
        self.K = kernels()
        if not simulated():
            per, shared = memory_estimate(model, integrator, scene, None, **options)
            free = free_memory()
            chunks = plan_chunks(B, per, shared, free)
            if len(chunks) > 1:
                n = chunks[0][1]
                raise DeviceMemoryError(
                    f"a batch of {B:,} {integrator} trajectories needs {per:,} bytes x {B:,} = {_gib(per * B)} on the "
                    f"GPU, {_gib(free)} free: at most {n:,} fit in one CudaBatch (pbsim.rollout(..., device='cuda') "
                    "runs a larger batch in chunks)")
            if per * B + shared >= MEMORY_NOTICE_BYTES:
                print(f"pbsim: {integrator} on the GPU: {per:,} bytes per trajectory x {B:,} = {_gib(per * B)} "
                      f"(+ {_gib(shared)} shared), {_gib(free)} free", file=sys.stderr, flush=True)
        super().__init__(model, integrator, scene, B, layout, options)
        if schedule == "launch" and self.spec.per_launch is None:
            raise InputError(f"integrator {integrator!r} has no per-launch (one iteration per launch) schedule")
        if schedule == "launch" and self.spec.fallback is not None and int(getattr(self.x, self.spec.fallback)) > 0:
            raise InputError(f"integrator {integrator!r}: the per-launch schedule has no sub-step fallback for a step "
                             "whose solver stalls (the kernel schedule has it, as the CPU paths); give substep=0 "
                             "or schedule='kernel'")
        self.schedule = schedule
        self.tpb = threads
        self.poll = max(1, int(poll))
        self.iterations = 0  # per-launch schedule: solver-iteration launches so far
        self._qo = dev_empty((B, model.nq))
        self._vo = dev_empty((B, model.nv))
        self._e = dev_empty((B, 2))
        self.t = 0.0
        self.set_control(None)

    def set_state(self, q, v=None):
        from pbsim.integrators.base import State

        st = State.make(self.model, q, v, self.B)
        dev_put(st.q, self.layout, out=self.q)
        dev_put(st.v, self.layout, out=self.v)
        self.q0, self.v0 = st.q.copy(), st.v.copy()  # the run's start (host), for diverged()
        if self.spec.fallback is not None:
            dev_put(np.zeros(self.B), self.layout, out=self.x.fbn)

    def advance(self, nsteps: int, dt: float):
        """``nsteps`` steps of size ``dt`` (asynchronous on a real GPU)."""
        nsteps = int(nsteps)
        dt = check_dt(dt)
        if nsteps <= 0:
            return
        args = (self.m, self.s, self.c, self.w, self.sw, self.x, self.q, self.v, self.qn, self.vn, dt)
        if self.schedule == "kernel":
            launch(self.kernel("steps"), self.B, *args, nsteps, tpb=self.tpb)
        else:
            n_iter = self.spec.per_launch[3]
            if n_iter is None:
                n_iter = int(self.x.maxit)
            done = getattr(self.x, self.spec.done) if self.spec.done else None
            begin, iterate, end = (self.kernel(k) for k in ("begin", "iterate", "end"))
            for _ in range(nsteps):
                launch(begin, self.B, *args, tpb=self.tpb)
                # one solver iteration per launch across all trajectories (paper 000 Fig. 1);
                # one extra launch lets iterate flag the trajectories that hit the limit
                for i in range(n_iter + (1 if done is not None else 0)):
                    launch(iterate, self.B, *args, tpb=self.tpb)
                    self.iterations += 1
                    if done is not None and (i + 1) % self.poll == 0 and dev_get(done).all():
                        break
                launch(end, self.B, *args, tpb=self.tpb)
                launch(self.K.commit, self.B, self.m, self.q, self.v, self.qn, self.vn, tpb=self.tpb)
        self.t += nsteps * dt

    def synchronize(self):
        if not simulated():
            _kern.cuda.synchronize()

    def record(self):
        """``(q (B, nq), v (B, nv), energy (B,))`` copied to the host."""
        launch(self.K.record, self.B, self.m, self.w, self.q, self.v, self._qo, self._vo, self._e, tpb=self.tpb)
        return dev_get(self._qo), dev_get(self._vo), dev_get(self._e).sum(axis=1)

    def solver_info(self):
        """``(B, 4)`` [iterations, residual, converged, objective] of the last step, for methods
        with an iterative solver (``StepSpec.info``), ``(B, 5)`` with the sub-steps the last step
        became for a method whose kernel sub-steps a stalled step (``StepSpec.fallback``); None otherwise."""
        return None if self.spec.info is None else dev_get(getattr(self.x, self.spec.info))

    def fallback_steps(self):
        """``(B,)`` steps since :meth:`set_state` that the kernel redid as sub-steps (as
        :meth:`pbsim.backends.cpu.CpuBatch.fallback_steps`); None for a method without the fallback."""
        return None if self.spec.fallback is None else dev_get(self.x.fbn).astype(np.int64)

    def state(self):
        """``(q, v)`` copied to the host (no energy evaluation)."""
        return dev_get(self.q), dev_get(self.v)

    def diverged(self):
        """``(diverged (B,), reasons)``: the shared divergence rule
        (:func:`pbsim.integrators.divergence.check_run`, on the host) on the current state against
        the state given to :meth:`set_state`."""
        from pbsim.integrators.divergence import check_run

        q, v = self.state()
        return check_run(self.model, self.q0, self.v0, q, v)
