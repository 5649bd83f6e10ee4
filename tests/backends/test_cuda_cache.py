"""The CUDA backend's compile options, disk cache, layout default and memory planning, checked
without a GPU: the cache key from its parts, a second process served from disk through NVVM and
nvJitLink (when ``numba-cuda[cu12]``'s toolkit wheels are installed), chunk planning from a
memory figure, and every registered method on ``device="cuda"`` under the CUDA simulator."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytest.importorskip("numba.cuda", reason="numba-cuda is not installed (pip install 'numba-cuda>=0.30')")

from pbsim.backends import cuda as pc  # noqa: E402
from pbsim.backends import cuda_cache as pc_cache  # noqa: E402
from pbsim.backends import cuda_device as pc_device  # noqa: E402
from pbsim.jit import source_hash, kernel_tree_hash  # noqa: E402


def _env(sim=False, **extra):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "models"), env.get("PYTHONPATH", "")])
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    if sim:
        env["NUMBA_ENABLE_CUDASIM"] = "1"
    env.update(extra)
    return env


def _spec(name):
    from pbsim.integrators import step_spec

    return step_spec(name)


def _key(
    name="euler", features=("contact",), layout="aos", cc=(9, 0), argtypes=("array(float64, 2d, C)",), phase="steps"
):
    spec = _spec(name)
    k = pc._variant_step(spec, spec.step, features) if spec.features else spec.step
    ident = pc._cache_ident(pc._steps_k, k, phase, features if spec.features else None, layout)
    return pc.key_digest(pc.cache_key(ident, argtypes, cc))


# ---------------------------------------------------------------------------------------------- key
def test_cache_key_is_deterministic_and_covers_each_part():
    base = _key()
    assert base == _key()
    assert _key(layout="soa") != base
    assert _key(features=("contact", "spd_extra")) != base  # another Variants build
    assert _key(features=()) != base
    assert _key(cc=(8, 0)) != base
    assert _key(argtypes=("array(float64, 2d, A)",)) != base
    assert _key(phase="iterate") != base


def test_different_specialised_kernels_get_different_keys():
    """pbad's and pbfd's steps, euler's and rk4's, two Variants of euler: never one key."""
    keys = {
        _key("pbad", features=()),
        _key("pbfd", features=()),
        _key("euler"),
        _key("rk4"),
        _key("euler", features=("contact", "body_contact")),
        _key("nmdp", features=None),
    }
    assert len(keys) == 6
    # the two Variants of euler are different kernel trees, not just different names
    spec = _spec("euler")
    a = pc._variant_step(spec, spec.step, ("contact",))
    b = pc._variant_step(spec, spec.step, ("contact", "spd_extra"))
    assert a is not b and kernel_tree_hash(a) != kernel_tree_hash(b)
    assert pc._variant_step(spec, spec.step, ("contact",)) is a  # the same build every time
    # per-launch phases of pbad: three kernels, three keys
    begin, iterate, end, _ = _spec("pbad").per_launch
    idents = [
        pc._cache_ident(pc._phase_k, k, p, (), "aos") for k, p in ((begin, "begin"), (iterate, "iterate"), (end, "end"))
    ]
    assert len({pc.key_digest(pc.cache_key(i, (), (9, 0))) for i in idents}) == 3


def test_cache_key_covers_options_and_versions(monkeypatch):
    base = _key()
    monkeypatch.setitem(pc.JIT_OPTIONS, "lto", True)
    assert _key() != base
    monkeypatch.setitem(pc.JIT_OPTIONS, "lto", False)
    assert _key() == base
    from pbsim.jit import twin as K

    base_pbad = _key("pbad")
    monkeypatch.setattr(K, "_NOINLINE", frozenset({"aba_forward"}))
    assert _key("pbad") != base_pbad  # the noinline set (euler's is empty: compiled fully inlined)
    monkeypatch.setenv("PBSIM_CUDA_NOINLINE", "aba_forward")
    assert _key() != base  # $PBSIM_CUDA_NOINLINE decides for every method
    monkeypatch.undo()
    monkeypatch.setattr(pc_cache, "_VERSIONS", pc.toolchain_versions()[:-1] + ("nvjitlink 13.0",))
    assert _key() != base


KEY_CHILD = """
import sys
from pbsim.backends import cuda as pc
from pbsim.integrators import step_spec
spec = step_spec("euler")
k = pc._variant_step(spec, spec.step, ("contact",))
print("KEY", pc.key_digest(pc.cache_key(pc._cache_ident(pc._steps_k, k, "steps", ("contact",), "aos"), (), (9, 0))))
"""


def _child_key(root):
    env = _env()
    env["PYTHONPATH"] = os.pathsep.join([str(root), str(ROOT / "models"), os.environ.get("PYTHONPATH", "")])
    r = subprocess.run(
        [sys.executable, "-c", KEY_CHILD], env=env, capture_output=True, text=True, timeout=300, cwd=root
    )
    line = [ln for ln in r.stdout.splitlines() if ln.startswith("KEY ")]
    assert line, r.stdout + r.stderr[-3000:]
    return line[0].split()[1]


def test_cache_key_changes_with_a_kernel_source(tmp_path):
    """The same key in another process; another key once a kernel source file changes (a copy of
    pbsim with one line added to the ABA kernels' file; the key also holds the code objects, so a
    copy at another path has keys of its own)."""
    copy = tmp_path / "src"
    shutil.copytree(ROOT / "pbsim", copy / "pbsim", ignore=shutil.ignore_patterns("__pycache__"))
    before = _child_key(copy)
    assert _child_key(copy) == before  # the same in every process
    f = copy / "pbsim" / "dynamics" / "aba.py"
    f.write_text(f.read_text() + "\n# changed\n")
    assert _child_key(copy) != before


# ------------------------------------------------------------------------------- compile options
def test_kernels_are_built_without_lto_and_with_noinline_functions():
    from pbsim.jit import CUDA_NOINLINE_DEFAULT, cuda_noinline, python_source
    from pbsim.jit.twin import kernel_tree

    assert pc.JIT_OPTIONS["lto"] is False  # numba-cuda's default with nvJitLink is lto=True
    if os.environ.get("PBSIM_CUDA_NOINLINE", "default") == "default":
        assert cuda_noinline() == frozenset(CUDA_NOINLINE_DEFAULT)
        # the explicit methods compile fully inlined (measured faster on the H200), the others not
        for name in ("euler", "rk4", "explicit_euler"):
            assert pc.step_noinline(_spec(name).step) == frozenset(), name
        for name in ("pbad", "pbfd", "ne_dry"):
            assert pc.step_noinline(_spec(name).step) == frozenset(CUDA_NOINLINE_DEFAULT), name
        # the PGM forms keep their problem evaluation, contact Jacobian, QP and projection out of line too
        pgm = frozenset(CUDA_NOINLINE_DEFAULT) | set(pc.EXTRA_NOINLINE["pbsim.integrators.pgm"])
        for name in ("nmdp", "nmdp_zo", "pbd_nmdp", "pbd_nmdp_zo"):
            assert pc.step_noinline(_spec(name).step) == pgm, name
        # every name there is a kernel of the PGM step's tree (a renamed function would silently inline)
        tree = {python_source(d).__name__ for n in ("nmdp", "pbd_nmdp") for d in kernel_tree(_spec(n).step)}
        assert set(pc.EXTRA_NOINLINE["pbsim.integrators.pgm"]) <= tree
        ident = pc._cache_ident(pc._steps_k, _spec("euler").step, "steps", None, "aos")
        assert ident["noinline"] == ()
        ident = pc._cache_ident(pc._steps_k, _spec("pbad").step, "steps", None, "aos")
        assert ident["noinline"] == tuple(sorted(CUDA_NOINLINE_DEFAULT))


def test_layout_auto_and_tpb_defaults(monkeypatch):
    assert pc.resolve_layout("auto", pc.AUTO_SOA_MIN_BATCH) == "soa"
    assert pc.resolve_layout("auto", pc.AUTO_SOA_MIN_BATCH - 1) == "aos"
    assert pc.resolve_layout("aos", 10**6) == "aos"
    assert pc.resolve_layout("auto", 10**6, "euler") == "soa"
    assert pc.resolve_layout("auto", 10**6, "pbad") == "aos"  # measured: SoA no faster for pbad
    assert pc.resolve_layout("auto", 10**6, "nmdp") == "aos"  # measured: SoA 0.77-0.80x for nmdp (fourth H200 run)
    assert pc.resolve_layout("auto", 10**6, "pbfd") == "soa"
    assert pc.resolve_layout("soa", 4, "pbad") == "soa"
    with pytest.raises(pc.InputError, match="'xyz'"):
        pc.resolve_layout("xyz", 4)
    monkeypatch.delenv("PBSIM_CUDA_TPB", raising=False)
    assert pc.threads_per_block() == pc.DEFAULT_TPB == 128
    import inspect

    from pbsim.rollout_gpu import rollout_cuda

    assert inspect.signature(pc.CudaBatch).parameters["layout"].default == "auto"
    assert inspect.signature(rollout_cuda).parameters["layout"].default == "auto"


# ---------------------------------------------------------------------------------- memory plan
def test_plan_chunks_from_a_memory_figure():
    GiB = 2**30
    assert pc.plan_chunks(1000, 10_000, 0, GiB) == [(0, 1000)]  # fits
    per = 70_000  # ~ pbad on the humanoid
    chunks = pc.plan_chunks(65_536, per, 10_000_000, 2 * GiB)
    assert len(chunks) > 1 and chunks[0][0] == 0 and chunks[-1][1] == 65_536
    assert all(a2 == b1 for (_, b1), (a2, _) in zip(chunks, chunks[1:]))  # contiguous, in order
    n = chunks[0][1]
    assert n % pc.DEFAULT_TPB == 0  # whole blocks
    assert n * per + 10_000_000 <= 2 * GiB * (1 - pc.MEMORY_RESERVE)
    assert (n + pc.DEFAULT_TPB) * per + 10_000_000 > 2 * GiB * (1 - pc.MEMORY_RESERVE)
    assert pc.plan_chunks(5, 100, 0, 350 / 0.9) == [(0, 3), (3, 5)]  # small chunks: not rounded to blocks
    with pytest.raises(pc.DeviceMemoryError, match="one trajectory needs 70,000 bytes"):
        pc.plan_chunks(10, per, 0, 50_000)
    with pytest.raises(pc.PbsimError):  # shared arrays alone do not fit
        pc.plan_chunks(10, 100, 10**9, 10**8)


def test_memory_estimate_matches_what_a_batch_allocates(monkeypatch):
    """bytes per trajectory x B + shared == the host mirror of CudaBatch's allocations."""
    import pbsim_models
    from pbsim.control.control import Control

    m = pbsim_models.chain(3)
    for name in ("euler", "pbad"):
        per, shared = pc.memory_estimate(m, name)
        assert per > 0 and shared > 0
        monkeypatch.setattr(pc_device, "_HOST_ARRAYS", True)
        B = 7
        p = pc._Plan(m, name, None, B, "soa", {})
        monkeypatch.setattr(pc_device, "_HOST_ARRAYS", False)
        got = sum(pc._nbytes(t) for t in (p.m, p.s, p.w, p.sw, p.x)) + sum(a.nbytes for a in (p.q, p.v, p.qn, p.vn))
        got += 8 * B * (m.nq + m.nv + 2) + pc._nbytes(Control().kernel_arrays(m, 1))  # frames, control
        assert got == per * B + shared, (name, got, per, shared)


# ------------------------------------------------------------------- disk cache, second process
BUILD_CHILD = """
import json, sys, time
t0 = time.perf_counter()
import pbsim_models
from pbsim.backends import cuda as pc
from pbsim.contact import make_scene
m = pbsim_models.swimmer()
r = pc.build_offline(m, "euler", "aos", cc=(9, 0), scene=make_scene(m, ground="plane"))
ptx = "".join(r["kernel"].library._ptx_cache[pc._lib_cc((9, 0))])
print("BUILD " + json.dumps({"hit": r["hit"], "build_s": r["seconds"], "process_s": time.perf_counter() - t0,
                             "path": r["path"], "sha": r["cubin_sha"], "cubin": r["cubin_bytes"],
                             "funcs": ptx.count(".func "), "entry": ".entry" in ptx and "sm_90a" in ptx}))
"""


@pytest.fixture(scope="module")
def toolkit():
    r = subprocess.run(
        [
            sys.executable,
            "-c",
            "from pbsim.backends.cuda import toolkit_missing; "
            "m = toolkit_missing(); print('MISSING ' + m if m else 'TOOLKIT_OK')",
        ],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    if "TOOLKIT_OK" not in r.stdout:
        pytest.skip(
            "NVVM / nvJitLink are not importable here (pip install 'numba-cuda[cu12]' to run this): "
            + (r.stdout + r.stderr).strip()[-300:]
        )
    from numba.cuda.cudadrv.driver import _have_nvjitlink

    if not _have_nvjitlink():
        pytest.skip("nvJitLink is not importable (pip install 'numba-cuda[cu12]'): no cubin without a GPU")


def _build(cache):
    r = subprocess.run(
        [sys.executable, "-c", BUILD_CHILD],
        env=_env(PBSIM_CACHE_DIR=str(cache), PBSIM_CUDA_NOINLINE="aba_forward,aba_backward"),
        capture_output=True,
        text=True,
        timeout=600,
    )
    line = [ln for ln in r.stdout.splitlines() if ln.startswith("BUILD ")]
    assert r.returncode == 0 and line, r.stdout[-2000:] + r.stderr[-3000:]
    return json.loads(line[0][len("BUILD ") :]), r.stderr


def test_second_process_is_served_from_disk(toolkit, tmp_path):
    """Process A compiles euler's step kernel (plane contact) to an sm_90a cubin with NVVM and
    nvJitLink, no GPU, and stores it under $PBSIM_CACHE_DIR/cuda; process B loads it (no typing,
    no NVVM, no ptxas): the same file and cubin, in well under the compile's time."""
    cold, err = _build(tmp_path)
    assert not cold["hit"] and cold["entry"] and cold["cubin"] > 0
    assert "compiling kernels for euler (aos, steps) on the GPU (first run only" in err
    assert Path(cold["path"]).is_file() and Path(cold["path"]).parent.parent == tmp_path / "cuda"
    assert Path(cold["path"]).parent.name == source_hash()
    assert cold["funcs"] > 0  # the noinline functions (here named by $PBSIM_CUDA_NOINLINE) stay .func definitions
    warm, err = _build(tmp_path)
    assert warm["hit"] and warm["path"] == cold["path"] and warm["sha"] == cold["sha"]
    assert "compiling kernels" not in err
    assert warm["build_s"] < 5 and warm["build_s"] < cold["build_s"] / 3, (cold, warm)
    # a damaged entry is a miss (and is rebuilt), never an error
    Path(cold["path"]).write_bytes(b"garbage")
    again, _ = _build(tmp_path)
    assert not again["hit"] and again["path"] == cold["path"]


# --------------------------------------------------------------------- every method on the device
def test_every_method_runs_on_cuda_or_is_refused_by_name():
    """Each registered integrator: one CudaBatch step under the CUDA simulator, or an InputError
    that names it (no step kernel: pbad3/4, variational...; or CUDA_REFUSED).  Also a rollout
    too big for the (simulated) device memory runs in chunks with the same result."""
    from pbsim.integrators import available

    r = subprocess.run(
        [sys.executable, str(Path(__file__).with_name("cudasim_methods.py"))],
        env=_env(sim=True),
        capture_output=True,
        text=True,
        timeout=float(os.environ.get("PBSIM_CUDASIM_TIMEOUT", "600")),
        cwd=ROOT,
    )
    lines = {ln.split()[1]: ln for ln in r.stdout.splitlines() if ln.startswith("METHOD ")}
    assert set(lines) == set(available()), r.stdout + r.stderr[-3000:]
    failed = [ln for ln in lines.values() if ln.split()[2] not in ("ok", "refused")]
    assert not failed, "\n".join(failed)
    from pbsim.integrators import step_spec

    for name, ln in lines.items():  # a method with a step kernel runs unless refused by name
        if step_spec(name) is not None and name not in pc.CUDA_REFUSED:
            assert ln.split()[2] == "ok", ln
    chunked = [ln for ln in r.stdout.splitlines() if ln.startswith("CHUNKED ")]
    assert chunked, r.stdout + r.stderr[-3000:]
    _, n, err = chunked[0].split()
    assert int(n) == 2 and float(err) == 0.0, chunked[0]


def test_refused_methods_name_themselves():
    for name, why in pc.CUDA_REFUSED.items():
        assert why
        with pytest.raises(pc.InputError, match=repr(name)):
            pc._Plan(None, name, None, 1, "aos", {})
    assert not set(pc.CUDA_REFUSED) & set(pc.supported_integrators())


def test_unverified_methods_are_refused_on_a_real_gpu_by_name(monkeypatch):
    """A method of CUDA_UNVERIFIED (ne_dry: its H200 run left the CPU's) is an InputError naming it
    and the reason on a real GPU, before anything is allocated; it runs under the simulator (the
    test above) and where ``$PBSIM_CUDA_ALLOW`` names it."""
    import pbsim_models

    assert "ne_dry" in pc.CUDA_UNVERIFIED
    monkeypatch.setattr(pc, "simulated", lambda: False)
    monkeypatch.delenv("PBSIM_CUDA_ALLOW", raising=False)
    for name in pc.CUDA_UNVERIFIED:
        with pytest.raises(pc.InputError, match=f"{name!r} is refused on the GPU: .*PBSIM_CUDA_ALLOW"):
            pc.CudaBatch(pbsim_models.chain(2), name, batch=1)
        monkeypatch.setenv("PBSIM_CUDA_ALLOW", f"euler, {name}")
        pc._refuse_unverified(name)  # allowed: no error
        monkeypatch.delenv("PBSIM_CUDA_ALLOW")
    pc._refuse_unverified("euler")  # any other method passes


def test_warmup_device_cuda_refuses_by_name():
    """``pbsim warmup --device cuda``: a method without a CUDA step kernel, an unknown layout or
    config are InputErrors naming them (before any process starts)."""
    from pbsim.errors import InputError
    from pbsim.warmup import CUDA_CONFIGS, warmup

    assert set(CUDA_CONFIGS) == {"contact", "free"}
    for kw, what in (
        ({"integrators": ["pbad3"]}, "pbad3"),
        ({"layouts": ["xyz"]}, "xyz"),
        ({"configs": ["batch"]}, "batch"),
    ):
        with pytest.raises(InputError, match=what):
            warmup(device="cuda", report=None, **kw)
