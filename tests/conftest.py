"""Shared fixtures: where third-party robot files live, and skips when they are absent; the runner
of the CUDA-simulator twin checks (``_cudasim_*.py``)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]

# One build per method: every run that may reuse a build takes the full one (pbsim.jit.variants_policy).
# The suite's runs ask for tens of feature sets (euler alone 10 builds in one CI run, ~40 s each; its
# full build ~64 s); the lean builds give the same numbers to the last bit (test_variants.py, which also builds
# them exactly).  Subprocesses inherit it.
os.environ.setdefault("PBSIM_VARIANTS", "full")


def shared_dir() -> Path | None:
    """``../shared`` beside the clone (CI), or $PBSIM_SHARED; None when absent."""
    env = os.environ.get("PBSIM_SHARED")
    for cand in ([Path(env)] if env else []) + [ROOT.parent / "shared"]:
        if (cand / "robots").is_dir():
            return cand
    return None


def robosimian_urdf(active: bool = True) -> Path:
    s = shared_dir()
    if s is None:
        pytest.skip("../shared (Robosimian) is not beside this clone")
    name = "robosimian_caesar_new_all_active.urdf" if active else "robosimian_caesar_new.urdf"
    return s / "robots" / "robosimian" / name


def terrain_file(name: str) -> Path:
    s = shared_dir()
    if s is None:
        pytest.skip("../shared terrains are not beside this clone")
    return s / "robots" / "robosimian" / "terrains" / name


def pybullet_file(rel: str) -> str:
    pybullet_data = pytest.importorskip("pybullet_data")
    p = os.path.join(pybullet_data.getDataPath(), rel)
    if not os.path.isfile(p):
        pytest.skip(f"{rel} not shipped by this pybullet_data")
    return p


def gymnasium_xml(name: str) -> str:
    gym = pytest.importorskip("gymnasium")
    p = os.path.join(os.path.dirname(gym.__file__), "envs", "mujoco", "assets", name)
    if not os.path.isfile(p):
        pytest.skip(f"gymnasium does not ship {name}")
    return p


def mjcf_pair(tmp_path, name: str, xml: str):
    """``(pbsim model, mujoco.MjModel)`` of the MJCF text ``xml`` written to ``tmp_path / name``: a
    model and its oracle from one file."""
    import mujoco

    import pbsim

    p = tmp_path / name
    p.write_text(xml)
    return pbsim.load(str(p)), mujoco.MjModel.from_xml_path(str(p))


_MJX_DOWNLOAD_FAILED: list[str] = []


def mjx_test_data(rel: str) -> str:
    """A file of MJX's test models (``mujoco/mjx/test_data/REL``): from an installed
    ``mujoco.mjx``, else from a cache (``$PBSIM_CACHE_DIR/mjx`` or ``~/.cache/pbsim/mjx``) that
    the first call fills with ``pip download --no-deps mujoco-mjx`` and the wheel's test_data;
    skips with the reason when neither works (no network)."""
    import shutil
    import zipfile

    spec = importlib.util.find_spec("mujoco")
    if spec is not None and spec.submodule_search_locations:
        for loc in spec.submodule_search_locations:
            p = Path(loc) / "mjx" / "test_data" / rel
            if p.is_file():
                return str(p)
    base = os.environ.get("PBSIM_CACHE_DIR")
    cache = (Path(base) if base else Path.home() / ".cache" / "pbsim") / "mjx"
    p = cache / "mujoco" / "mjx" / "test_data" / rel
    if not (cache / "mujoco" / "mjx" / "test_data").is_dir():
        if _MJX_DOWNLOAD_FAILED:  # tried once in this session already
            pytest.skip(_MJX_DOWNLOAD_FAILED[0])
        wheels = cache / "wheel"
        try:
            r = subprocess.run(
                [sys.executable, "-m", "pip", "download", "--no-deps", "mujoco-mjx", "-d", str(wheels)],
                capture_output=True,
                text=True,
                timeout=300,
            )
            why = (r.stderr or r.stdout).strip()[-300:]
        except (OSError, subprocess.TimeoutExpired) as e:
            why = str(e)
        found = sorted(wheels.glob("mujoco_mjx-*.whl")) if wheels.is_dir() else []
        if not found:
            _MJX_DOWNLOAD_FAILED.append(
                f"MJX test data: no mujoco.mjx installed and `pip download mujoco-mjx` failed: {why}"
            )
            pytest.skip(_MJX_DOWNLOAD_FAILED[0])
        tmp = cache / f"tmp-{os.getpid()}"  # extracted whole, then moved in: no half-filled cache
        with zipfile.ZipFile(found[-1]) as z:
            z.extractall(tmp, [n for n in z.namelist() if n.startswith("mujoco/mjx/test_data/")])
        try:
            os.replace(tmp / "mujoco", cache / "mujoco")
        except OSError:  # another process got there first
            pass
        shutil.rmtree(tmp, ignore_errors=True)
    if not p.is_file():
        pytest.skip(f"MJX test data has no {rel}")
    return str(p)


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


def run_cudasim_twin(script: Path, ref: Path, cpu_args=(), argv=(), timeout=600):
    """A ``_cudasim_*.py`` twin check in its two halves: ``cpu_outputs(*cpu_args)`` of ``script``
    computed in this process into ``ref`` (.npz), then ``python script ref *argv`` under
    NUMBA_ENABLE_CUDASIM=1 (it must be set before numba.cuda is imported: hence a subprocess).
    Skips without numba.cuda; asserts the subprocess exited 0.  Returns ``(diffs, stdout)``:
    ``{name: value}`` of its ``DIFF name value`` lines and its output."""
    pytest.importorskip("numba.cuda")
    spec = importlib.util.spec_from_file_location(f"_pbsim{script.stem}", script)
    check = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(check)
    np.savez(ref, **check.cpu_outputs(*cpu_args))
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "models"), env.get("PYTHONPATH", "")])
    r = subprocess.run(
        [sys.executable, str(script), str(ref), *argv], env=env, capture_output=True, text=True, timeout=timeout
    )
    assert r.returncode == 0, r.stdout + r.stderr[-3000:]
    diffs = {ln.split()[1]: float(ln.split()[2]) for ln in r.stdout.splitlines() if ln.startswith("DIFF")}
    return diffs, r.stdout


def batch_equals_step(method, model, scene, q0, v0, steps, dt, check=None, **options):
    """``steps`` steps of ``make(method, model, scene, **options).step`` from (q0, v0) (``check(d)``
    must hold after each, when given) and the same by ``CpuBatch`` (the generic batch driver on the
    same step kernel): asserts q and v equal bit for bit and every trajectory's solver converged.
    Returns (the integrator's last Diagnostics, ``CpuBatch.solver_info()``)."""
    from pbsim.backends.cpu import CpuBatch
    from pbsim.integrators import State, make

    integ = make(method, model, scene, **options)
    s = State.make(model, q0, v0)
    for _ in range(steps):
        s, d = integ.step(s, None, dt)
        if check is not None:
            assert check(d), d
    cb = CpuBatch(model, method, scene=scene, batch=len(q0), **options)
    cb.set_state(q0, v0)
    cb.advance(steps, dt)
    q, v = cb.state()
    assert np.array_equal(q, s.q) and np.array_equal(v, s.v)
    info = cb.solver_info()
    assert (info[:, 2] == 1).all()
    return d, info


def euler_steps_without_contact(method):
    """``method`` with no scene on a damped 4-link chain under stable PD, and ``euler`` beside it:
    200 steps of 10 ms (the velocity-level methods' dense solve of ``M + dt Kd (+ dt damping)`` is
    euler's MABA step).  Asserts q and v agree to 1e-10 and the last step had no contact and no
    solver iteration; returns its Diagnostics."""
    import pbsim_models
    from pbsim.control import Control
    from pbsim.integrators import State, make

    model = pbsim_models.chain(4, damping=0.05)
    q0 = np.array([0.4, -0.3, 0.2, 0.1])
    ctl = Control(mode="spd", kp=2.0, kd=0.2, q_ref=np.zeros(4))
    a = State.make(model, q0)
    b = State.make(model, q0)
    ne, eu = make(method, model), make("euler", model)
    for _ in range(200):
        a, da = ne.step(a, ctl, 0.01)
        b, _ = eu.step(b, ctl, 0.01)
    assert np.allclose(a.q, b.q, atol=1e-10) and np.allclose(a.v, b.v, atol=1e-10)
    assert da.extra["active_contacts"][0] == 0 and da.iterations[0] == 0
    return da
