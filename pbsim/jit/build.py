"""One kernel source, two targets: the ``@kernel`` decorator, ``bind``, ``specialize``, ``Variants``.

Kernels are plain Python functions over preallocated arrays (no allocation, no
Python objects, no exceptions).  ``@kernel`` compiles one with ``numba.njit``
for the CPU and remembers the Python source, so that :func:`cuda_twin` can
compile the *same* function with ``numba.cuda.jit(device=True)``: the twin gets
a copy of the function's globals in which every other ``@kernel`` it calls is
replaced by that kernel's own CUDA twin.  Nothing here imports CUDA until a twin
is asked for, so the CPU path never needs numba-cuda.
"""
from __future__ import annotations

import ast
import hashlib
import inspect
import itertools
import os
import textwrap
import types
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numba
from numba.core import types as types_
import llvmlite.binding as llvm_binding
from numba.core.codegen import JITCodeLibrary
from numba.core.compiler import Compiler
from numba.core.registry import CPUDispatcher

from pbsim.jit.lock import locked


def source_hash() -> str:
    """Hash of every pbsim source file that defines kernels.

    numba's cache only watches a function's own file, so a kernel whose callee (in another
    file) changed would load stale machine code.  Keying the cache folder on all kernel sources
    makes any change recompile everything that depends on it."""
    h = hashlib.sha1()
    root = Path(__file__).resolve().parents[1]
    for p in sorted(root.rglob("*.py")):
        data = p.read_bytes()
        if b"@kernel" in data or p.parent.name == "jit":
            h.update(str(p.relative_to(root)).encode())
            h.update(data)
    return h.hexdigest()[:16]


def internalize() -> bool:
    """Whether top-level builds make the kernels linked into them internal (:class:`DriverLibrary`):
    ``$PBSIM_INTERNALIZE=1``, opt-in, built into a cache folder of its own.  Steps run 1.5-2.5x
    faster, but the first-run compile of the large step trees grew 30-60 % (LLVM's module passes
    over internal kernels of ~1000 parameters; ``noinline`` did not help), which took the test
    suite past its budget (docs/benchmarks.md)."""
    return os.environ.get("PBSIM_INTERNALIZE", "0") == "1"


def _cache_dir() -> str:
    base = os.environ.get("PBSIM_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "pbsim", "numba")
    return os.path.join(base, f"{numba.__version__}-{source_hash()}" + ("-internal" if internalize() else ""))


numba.config.CACHE_DIR = _cache_dir()


def cached_njit(f, **options):
    """``numba.njit(cache=True, **options)(f)`` whose first compilation is locked across processes
    (:mod:`pbsim.jit.lock`): processes that start together compile a kernel once, not once each.
    Its code library is a :class:`DriverLibrary` (with :func:`internalize`, the kernels below it
    made internal)."""
    return locked(numba.njit(cache=True, pipeline_class=_DriverCompiler, **options)(f), numba.config.CACHE_DIR)


def cuda_cache_dir() -> str:
    """Folder of the CUDA step kernels' compiled code (:mod:`pbsim.backends.cuda`): ``cuda/``
    under the same root as the CPU cache (``$PBSIM_CACHE_DIR``, else ``~/.cache/pbsim``)."""
    base = os.environ.get("PBSIM_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "pbsim")
    return os.path.join(base, "cuda")


_LINKONCE_ODR, _INTERNAL = llvm_binding.Linkage.linkonce_odr, llvm_binding.Linkage.internal
_DRIVER_SEQ = itertools.count()  # DriverLibrary's per-build suffix of the names it makes internal
_PY_FUNCS: dict[int, types.FunctionType] = {}  # id(cpu dispatcher) -> python function


PARALLEL_MIN_BATCH = 4  # below this many states a batch runs on the calling thread
_POOL: ThreadPoolExecutor | None = None


def _pool(n: int) -> ThreadPoolExecutor:
    global _POOL
    if _POOL is None or _POOL._max_workers != n:  # noqa: SLF001 - resized with numba's thread count
        _POOL = ThreadPoolExecutor(max_workers=n, thread_name_prefix="pbsim-batch")
    return _POOL


def _ranged_source(f):
    """The batch driver ``f`` (``for i in prange(X.shape[0]): ...``) rewritten as a function of a
    row range: extra trailing parameters ``_b0, _b1`` and ``for i in range(_b0, _b1)``.  Returns
    ``(function, index of X among the parameters)``.  Line numbers and file stay those of ``f``."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(f)))
    fn = tree.body[0]
    fn.decorator_list = []
    names = [a.arg for a in fn.args.args]
    loop = next((n for n in ast.walk(fn) if isinstance(n, ast.For) and isinstance(n.iter, ast.Call)
                 and getattr(n.iter.func, "id", "") == "prange"), None)
    bound = loop.iter.args[0] if loop is not None and len(loop.iter.args) == 1 else None
    if not (isinstance(bound, ast.Subscript) and isinstance(bound.value, ast.Attribute)
            and bound.value.attr == "shape" and isinstance(bound.value.value, ast.Name)
            and bound.value.value.id in names and ast.unparse(bound.slice) == "0"):
        raise TypeError(f"batch driver {f.__qualname__} must loop 'for i in prange(ARG.shape[0])' over an argument")
    loop.iter = ast.Call(func=ast.Name("range", ast.Load()), args=[ast.Name("_b0", ast.Load()),
                                                                    ast.Name("_b1", ast.Load())], keywords=[])
    fn.args.args += [ast.arg("_b0"), ast.arg("_b1")]
    fn.name = f.__name__ + "_rows"
    ast.fix_missing_locations(tree)
    ast.increment_lineno(tree, f.__code__.co_firstlineno - 1)
    ns: dict = {}
    exec(compile(tree, f.__code__.co_filename, "exec"), f.__globals__, ns)  # noqa: S102 - our own source
    g = ns[fn.name]
    g.__qualname__ = f.__qualname__ + "_rows"
    g.__module__ = f.__module__
    return g, names.index(bound.value.value.id)


class BatchKernel:
    """A batch driver: one serial, GIL-free build over a row range, run on several threads.

    The driver is written with a ``prange`` loop over its states; it is compiled once as a
    function of a row range (``_ranged_source``) with ``nogil=True``, and a call splits the batch
    into one contiguous range per numba thread (``numba.set_num_threads``) on a thread pool.  This
    replaces numba's ``parallel=True`` build, which compiled the whole kernel tree twice more
    (gufunc and caller: 53-75 s on a first batched run).  Rows are independent, so the threads
    share nothing but the read-only model.  The price is one argument dispatch per thread
    (~40 us, under the GIL) instead of one per call: per-step batched calls measured 10-50 %
    slower on the 2-vCPU machine, batched ABA on 1000 states the same
    (``scripts/bench/bench_batch.py``, docs/benchmarks.md); multi-step calls amortize it.  Batches smaller than ``PARALLEL_MIN_BATCH``
    (or one thread) run on the calling thread.
    """

    def __init__(self, f):
        self.py_func = f
        ranged, self.batch_arg = _ranged_source(f)
        self.rows = cached_njit(ranged, nogil=True, error_model="numpy", no_cfunc_wrapper=True)
        self.__doc__ = f.__doc__
        self.__name__ = f.__name__

    def __call__(self, *args):
        B = args[self.batch_arg].shape[0]
        nt = min(numba.get_num_threads(), B)
        if B < PARALLEL_MIN_BATCH or nt < 2:
            return self.rows(*args, 0, B)
        cuts = [B * k // nt for k in range(nt + 1)]
        futs = [_pool(nt).submit(self.rows, *args, cuts[k], cuts[k + 1]) for k in range(1, nt)]
        self.rows(*args, cuts[0], cuts[1])  # the calling thread takes the first range
        for fu in futs:
            fu.result()


def _renamed(f, suffix: str):
    """A copy of function ``f`` whose qualname ends in ``suffix`` (so it gets its own cache file)."""
    g = types.FunctionType(f.__code__, f.__globals__, f.__name__, f.__defaults__, f.__closure__)
    g.__qualname__ = f.__qualname__ + suffix
    g.__module__ = f.__module__
    g.__doc__ = f.__doc__
    return g


class LinkOnlyLibrary(JITCodeLibrary):
    """The code library of an :class:`InnerKernel`: LLVM IR to be linked into its callers, never
    optimized as a whole module nor turned into machine code on its own.

    numba optimizes and emits machine code for a function's whole call tree (its callees' modules
    linked in) at *every* level of the tree, so a leaf 8 calls deep was optimized and emitted 8
    times.  Kernels are only ever called from other kernels, so only the top-level batch driver
    (a plain cached njit function) needs machine code: its module, with every kernel below it
    linked in, is optimized and emitted once.  Function-level passes still run on each kernel
    when it is lowered (``add_llvm_module``)."""

    def finalize(self):
        self._raise_if_finalized()
        seen = set()
        for library in self._linking_libraries:
            if library not in seen:
                seen.add(library)
                self._reload_init.update(library._reload_init)
                self._final_module.link_in(library._get_module_for_linking(), preserve=True)
        self._finalized = True


class DriverLibrary(JITCodeLibrary):
    """The code library of a top-level build (a batch driver, a kernel's Python twin): with
    :func:`internalize`, before the whole module is optimized, every kernel linked into it gets
    internal linkage.

    numba passes a namedtuple argument as its flattened fields, and it links callees with
    ``linkonce_odr`` linkage, which LLVM may neither drop arguments of nor assume to have no other
    callers.  The model and workspace are namedtuples of ~70 and ~40 arrays (~580 and ~460 words),
    so every kernel call that LLVM did not inline stored ~1000 words: ~330 ns a call, most of a
    semi-implicit Euler step (two free 6-link chains: 8.0 us, 2.3 us with internal kernels,
    ``scripts/bench/bench_calls.py``).  Internal kernels let LLVM drop the arguments a callee does
    not read and inline kernels called once.  Nothing outside the build calls them (the build's
    own entry points keep their linkage), and no floating-point operation changes (no fast-math).
    Opt-in (:func:`internalize`): the large trees' first compile grows 30-60 %."""

    def _optimize_final_module(self):
        if internalize():
            # renamed as well: MCJIT resolves a weak reference of a module compiled later (a plain
            # njit caller of a kernel) by name through the modules it holds, internal ones included,
            # and would call this build's copy, whose signature LLVM is about to change (a segfault,
            # tests/optim/test_qp.py on a cold cache)
            tag = f".pbsim_driver{next(_DRIVER_SEQ)}"
            for fn in self._final_module.functions:
                if not fn.is_declaration and fn.linkage == _LINKONCE_ODR:
                    fn.linkage = _INTERNAL
                    fn.name = fn.name + tag
        super()._optimize_final_module()


class _DriverCompiler(Compiler):
    """numba's pipeline with a :class:`DriverLibrary` for the function's code."""

    def compile_extra(self, func):
        if self.state.library is None:
            self.state.library = DriverLibrary(self.state.targetctx.codegen(), func.__qualname__)
            self.state.library.enable_object_caching()  # as numba's lowering does for the library it makes
        return super().compile_extra(func)


class _InnerCompiler(Compiler):
    """numba's pipeline with a :class:`LinkOnlyLibrary` for the function's code."""

    def compile_extra(self, func):
        if self.state.library is None:
            self.state.library = LinkOnlyLibrary(self.state.targetctx.codegen(), func.__qualname__)
        self.state.flags.no_compile = True  # lowered IR only: no entry point of its own
        return super().compile_extra(func)


class _InnerEntry:
    """Stands for an :class:`InnerKernel` overload's entry point (it has none)."""

    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"<inner kernel {self.name}>"


class InnerKernel(CPUDispatcher):
    """A kernel compiled for other kernels only: no CPython or C-callback wrapper.

    Every ``@kernel`` is called natively by other kernels; building a CPython wrapper for each
    one (it unboxes every field of the model/workspace namedtuples) was a quarter of the
    first-run compile time.  Its code is never made into machine code of its own (see
    :class:`LinkOnlyLibrary`), so it is not cached either: only the batch drivers above it are.
    Called from Python (tests, tools), the kernel runs through a twin dispatcher with the
    wrapper, compiled (or loaded from the cache) on first such call.

    Literal arguments are typed by their plain type: ``f(x, True)`` and ``f(x, False)`` share
    one compilation instead of one each (numba prunes no branch on a literal bool, so the extra
    specializations bought nothing; LLVM still folds the constant after inlining)."""

    def add_overload(self, cres):
        # No entry point (nothing is called through this dispatcher from Python): a unique key
        # stands for it, under which callers find the lowered function to call and link.
        if cres.entry_point is None:
            key = _InnerEntry(self.py_func.__qualname__)
            cres = cres._replace(entry_point=key)
            self.targetctx.insert_user_function(key, cres.fndesc, [cres.library])
        self.overloads[tuple(cres.signature.args)] = cres

    def get_call_template(self, args, kws):
        args = tuple(types_.unliteral(a) for a in args)
        kws = {k: types_.unliteral(a) for k, a in kws.items()}
        return super().get_call_template(args, kws)

    def __call__(self, *args, **kws):
        twin = self.__dict__.get("_py_twin")
        if twin is None:
            twin = cached_njit(_renamed(self.py_func, "__py"), error_model="numpy", _nrt=False)
            self.__dict__["_py_twin"] = twin
        return twin(*args, **kws)


def kernel(fn=None, *, parallel: bool = False, inline: bool = False):
    """Compile ``fn`` for the CPU (njit, cached) and register it for a CUDA twin.

    ``parallel=True`` marks a batch driver (a ``prange`` loop over states): it becomes a
    :class:`BatchKernel` with a serial and a parallel build.
    """

    def wrap(f):
        if parallel:
            return BatchKernel(f)
        # _nrt=False: kernels allocate nothing, so array views need no reference counting; with
        # it, every view (w.R[b, i]) cost an atomic incref/decref pair (3x slower kernels).
        return _inner(f, inline)

    return wrap(fn) if fn is not None else wrap


def _inner(f, inline: bool = False) -> InnerKernel:
    disp = InnerKernel(py_func=f, locals={}, pipeline_class=_InnerCompiler, targetoptions=dict(
        error_model="numpy", inline="always" if inline else "never", _nrt=False,
        no_cpython_wrapper=True, no_cfunc_wrapper=True))
    _PY_FUNCS[id(disp)] = f
    return disp


@kernel
def unused(*args):
    """Stands in for a callee that a kernel variant never reaches (see :class:`Variants`)."""
    return


@kernel
def unused_float(*args):
    """:func:`unused` for a callee whose float result the caller uses."""
    return 0.0


def _with_globals(f, g, qualname=None):
    h = types.FunctionType(f.__code__, g, f.__name__, f.__defaults__, f.__closure__)
    h.__qualname__ = qualname or f.__qualname__
    h.__module__ = f.__module__
    h.__doc__ = f.__doc__
    return h


def _substituted_globals(f, subs, memo):
    """``f``'s globals with every name in ``subs`` replaced, and every kernel it calls replaced
    by its own substituted clone; None when nothing changes."""
    g = None
    for n in f.__code__.co_names:
        v = f.__globals__.get(n)
        new = subs[n] if n in subs else _substituted(v, subs, memo) if is_kernel(v) else v
        if new is not v:
            if g is None:
                g = dict(f.__globals__)
            g[n] = new
    return g


def _substituted(disp, subs, memo):
    key = id(disp)
    if key not in memo:
        memo[key] = disp  # guards against a (never expected) recursive kernel
        f = _PY_FUNCS[key]
        g = _substituted_globals(f, subs, memo)
        if g is not None:
            memo[key] = _inner(_with_globals(f, g), disp.targetoptions.get("inline") == "always")
    return memo[key]


_BOUND: dict = {}


def bind(driver: BatchKernel, **kernels) -> BatchKernel:
    """A copy of batch driver ``driver`` whose global names in ``kernels`` (e.g. ``_step``) call
    the given kernels: how one generic driver runs every integrator's step kernel.  Each binding
    is built once and cached on disk under its own name (``driver__kernel``)."""
    key = (id(driver), tuple(sorted((k, id(v)) for k, v in kernels.items())))
    if key not in _BOUND:
        f = driver.py_func
        g = dict(f.__globals__)
        g.update(kernels)
        tag = "_".join(getattr(v, "__name__", None) or v.py_func.__name__ for _, v in sorted(kernels.items()))
        _BOUND[key] = BatchKernel(_with_globals(f, g, f"{f.__qualname__}__{tag}"))
    return _BOUND[key]


_ENTRIES: dict = {}


def entry(f, **kernels):
    """A cached ``njit`` copy of the plain function ``f`` (a Python-callable entry point, not a
    kernel) whose global names in ``kernels`` call the given kernels: how one generic entry
    (e.g. :class:`pbsim.backends.cpu.Stepper`'s single step) runs every method's step kernel.
    Built once per binding, cached on disk under its own name (``f__kernel``)."""
    key = (id(f), tuple(sorted((k, id(v)) for k, v in kernels.items())))
    if key not in _ENTRIES:
        g = dict(f.__globals__)
        g.update(kernels)
        tag = "_".join(_PY_FUNCS[id(v)].__qualname__ for _, v in sorted(kernels.items()))
        h = _with_globals(f, g, f"{f.__qualname__}__{tag}")
        _ENTRIES[key] = cached_njit(h, error_model="numpy")
    return _ENTRIES[key]


_SPECIALIZED: dict = {}  # hook bindings -> (tag, memo: id(kernel) -> its copy)


def specialize(k, tag: str, **names):
    """A copy of kernel ``k`` (not a batch driver: see :func:`bind`) in which the global names in
    ``names`` are the given kernels, in ``k`` and in every kernel below it that uses them (those
    are copied likewise; kernels that reach none of the names are shared, not copied): how one
    generic kernel, e.g. the LM loop of :mod:`pbsim.optim.lm`, runs several problems whose
    pieces it calls through global names.

    Copies are built once per set of ``names`` and shared between the kernels specialized with
    it: ``specialize(loop, t, **h)`` calls the very kernel ``specialize(iterate, t, **h)`` returns
    when ``loop`` calls ``iterate``.  ``tag`` names the binding: every copy's qualified name gets
    ``__tag`` (its own cache entries when called from Python; one tag per set of names)."""
    key = tuple(sorted((n, id(v)) for n, v in names.items()))
    t, memo = _SPECIALIZED.setdefault(key, (tag, {}))
    if t != tag:
        raise ValueError(f"specialize: these names are already bound under the tag {t!r}, not {tag!r}")
    if any(t2 == tag and key2 != key for key2, (t2, _) in _SPECIALIZED.items()):
        raise ValueError(f"specialize: tag {tag!r} already names another binding")
    before = set(memo)
    out = _substituted(k, names, memo)
    for kid in set(memo) - before:  # the copies made now (a kernel that changed maps to a new object)
        c = memo[kid]
        if id(c) != kid:
            f = _PY_FUNCS[id(c)]
            f.__qualname__ = f"{f.__qualname__}__{tag}"
    return out


VARIANTS_POLICIES = ("reuse", "full")


def variants_policy() -> str:
    """``$PBSIM_VARIANTS``: ``reuse`` (default: the exact build, or a compiled one of more features)
    or ``full`` (every reusing call takes the build of every feature: one compilation per method
    serves every run of a process and of the disk cache; the test suite runs so: its runs ask for
    tens of feature sets, and a fresh-clone run compiled 10 euler driver builds of ~40 s where the
    full one takes ~64 s)."""
    v = os.environ.get("PBSIM_VARIANTS", "reuse").strip() or "reuse"
    if v not in VARIANTS_POLICIES:
        from pbsim.errors import InputError

        raise InputError(f"PBSIM_VARIANTS={v!r}: expected one of {', '.join(VARIANTS_POLICIES)}")
    return v


# Features whose kernels slow a step down even when a run skips them: a build that carries them
# unused does not stand in for one without them (Variants._reused).  Measured (euler, two 6-link
# chains, no constraint, one thread, us per step): the lean build 4.80, carrying the equality
# kernels 6.97 (+45 %), the limit solve 6.14 (+28 %); contact 4.79, spd_extra 4.91, fluid and
# muscle 4.80 each (scripts/bench/bench_equality.py had timed the free model on the equality
# build).  The cost is LLVM's: the larger step tree inlines its hot calls differently, and each
# call left out of line copies the whole model and workspace (DriverLibrary).
HEAVY_FEATURES = frozenset({"equality", "limits"})


class Variants:
    """Builds of a batch driver that compile only the optional features a run uses.

    A kernel compiles every branch, whatever the runtime flags, so a step that *may* use dense
    SPD solvers, effort clamping or contact compiles them all.  ``Variants(driver, features)``
    with ``features = {"contact": ("contact_generalized_forces",), ...}`` (feature -> names of
    the kernels only that feature reaches; or a dict name -> stand-in, e.g. :func:`unused_float`
    for a kernel whose result is used) gives, for the set of features a run uses, a copy of
    ``driver`` whose kernel tree calls :func:`unused` instead of the other features' kernels
    (each copy has its own cache entry).  The caller must pick the features from the same flags
    the kernels branch on: a variant that lacks a feature the run then uses skips it silently.
    """

    def __init__(self, driver: BatchKernel, features: dict, heavy=HEAVY_FEATURES):
        self.driver = driver
        self.heavy = frozenset(heavy)  # never carried unused by a reused build (HEAVY_FEATURES)
        self.features = {k: dict(v) if isinstance(v, dict) else dict.fromkeys(v, unused) for k, v in features.items()}
        self._built: dict = {}
        self._picked: dict = {}  # reuse=True: off -> the build that serves it

    def __call__(self, reuse: bool = True, **used) -> BatchKernel:
        """The build for the features in ``used`` (a feature not named is used).  With ``reuse``, a
        build of more features that is already compiled (in this process or in the disk cache)
        stands in when this exact one is not: it gives the same numbers, since the extra features'
        kernels branch on the same runtime flags and are skipped (``test_variants.py``: identical to
        the last bit), and it saves compiling the whole step tree once more (10-45 s each).  A
        build that would carry a heavy feature unused (:data:`HEAVY_FEATURES`) does not stand in.  With
        ``$PBSIM_VARIANTS=full`` (:func:`variants_policy`) a reused build is always the full one."""
        off = self.off(**used)
        if reuse and variants_policy() == "full":
            return self.driver
        if not reuse or not off:
            return self.build(off)
        if off not in self._picked:
            self._picked[off] = self._reused(off)
        return self._picked[off]

    def off(self, **used) -> tuple:
        """The sorted names of the features ``used`` switches off (a feature not named is used)."""
        bad = set(used) - set(self.features)
        if bad:
            raise KeyError(f"unknown features {sorted(bad)}; known: {sorted(self.features)}")
        return tuple(sorted(k for k in self.features if not used.get(k, True)))

    def _reused(self, off: tuple) -> BatchKernel:
        """The build with ``off`` switched off, or the compiled build with the fewest more features on
        (none of them heavy)."""
        exact = self.build(off)
        if compiled(exact):
            return exact
        for r in range(len(off) - 1, -1, -1):  # fewest extra features first
            for sub in itertools.combinations(off, r):
                if self.heavy.intersection(off).difference(sub):
                    continue  # it would carry a heavy feature this run does not use
                if compiled(self.build(sub)):
                    return self.build(sub)
        return exact

    def build(self, off: tuple) -> BatchKernel:
        """The build with the features in ``off`` (sorted names) switched off."""
        if not off:
            return self.driver
        if off not in self._built:
            subs = {name: stub for k in off for name, stub in self.features[k].items()}
            f = self.driver.py_func
            memo: dict = {}
            g = _substituted_globals(f, subs, memo)
            # every copied kernel gets its own name: numba emits kernels with one-definition linkage
            # keyed on the qualified name, so a copy named like the original (or like another
            # variant's copy) could be resolved to the other definition by the JIT, in-process or
            # through the disk cache (a clamped run silently used the no-clamp build)
            suffix = f"__without_{'_'.join(off)}"
            for kid, c in memo.items():
                if id(c) != kid and not _PY_FUNCS[id(c)].__qualname__.endswith(suffix):
                    _PY_FUNCS[id(c)].__qualname__ += suffix
            self._built[off] = self.driver if g is None else BatchKernel(  # None: the tree never reaches them
                _with_globals(f, g, f"{f.__qualname__}__without_{'_'.join(off)}"))
        return self._built[off]


def compiled(bk: BatchKernel) -> bool:
    """Whether batch driver ``bk`` has machine code: compiled in this process, or in numba's disk
    cache for this source (its index for the build's name is not empty)."""
    if bk.rows.overloads:
        return True
    try:
        return bool(bk.rows._cache._cache_file._load_index())  # noqa: SLF001 - numba's cache index
    except Exception:  # noqa: BLE001 - no cache, or another numba: compile as usual
        return False


def is_kernel(obj) -> bool:
    return id(obj) in _PY_FUNCS


def python_source(disp):
    """The plain Python function behind a kernel (runs without numba, slowly)."""
    return _PY_FUNCS[id(disp)]


_PY_TREES: dict = {}


def python_tree(disp):
    """Kernel ``disp`` as plain Python down its whole call tree (every kernel it calls replaced by
    its own plain function, recursively): the kernels' math run by the interpreter, with no
    compilation, as the CUDA simulator runs them.  For test tools that evaluate a kernel a few
    times from Python, where compiling its tree with a Python wrapper took a minute."""
    key = id(disp)
    if key not in _PY_TREES:
        f = _PY_FUNCS[key]
        g = dict(f.__globals__)
        _PY_TREES[key] = _with_globals(f, g)  # registered before the callees: a cycle ends here
        for n in f.__code__.co_names:
            v = g.get(n)
            if is_kernel(v):
                g[n] = python_tree(v)
    return _PY_TREES[key]


