"""The CUDA twins of the new shapes' distances (issue 29) against the CPU kernels: ``env_sdf`` over
a world cylinder, a world ellipsoid and a turned, bounded, triangulated (MJCF) hfield, and
``sdf_ellipsoid`` as a body shape, at 64 points (``tests/contact/test_geoms29.py`` runs it
through ``conftest.run_cudasim_twin``: CPU half in pytest, this file under NUMBA_ENABLE_CUDASIM=1).
"""

import sys
from pathlib import Path

import numpy as np

sys.path[:0] = [str(Path(__file__).parent), str(Path(__file__).parents[2])]

from numba import cuda  # noqa: E402  (the simulator swaps this module global inside kernels)

from pbsim.contact import Cylinder, Ellipsoid, HeightField  # noqa: E402
from pbsim.contact.environment import pack_environment  # noqa: E402
from pbsim.contact.query import env_sdf  # noqa: E402
from pbsim.contact.scene import make_kscene  # noqa: E402
from pbsim.contact.sdf import sdf_ellipsoid  # noqa: E402

NAMES = ("env", "ell")


def setup():
    c, s = np.cos(0.4), np.sin(0.4)
    R = np.array([[c, -s, 0], [s, c, 0], [0, 0, 1.0]])
    env = [
        Cylinder(0.1, 0.3, R, (0.5, 0.0, 0.2)),
        Ellipsoid((0.3, 0.2, 0.1), R, (-0.5, 0.2, 0.1)),
        HeightField.from_mjcf((0.6, 0.4, 0.3, 0.1), np.random.default_rng(0).uniform(0, 1, (4, 5)), R, (0, -0.5, 0)),
    ]
    ks = make_kscene(0, np.zeros(0, np.int32), np.zeros((0, 3)), np.zeros(0), np.zeros(0), np.zeros(0), 0.5, 0.01,
                     pack_environment(env))  # fmt: skip
    X = np.random.default_rng(1).uniform([-1, -1, -0.1], [1, 1, 0.5], (64, 3))
    row = np.r_[R.reshape(-1), 0.1, -0.2, 0.3, 0.3, 0.2, 0.1]
    return ks, X, row


def cpu_outputs() -> dict:
    ks, X, row = setup()
    env, ell = np.zeros((len(X), 4)), np.zeros((len(X), 4))
    for i, x in enumerate(X):
        env[i] = env_sdf(ks, x[0], x[1], x[2], ks.env_all)
        ell[i] = sdf_ellipsoid(row, x[0], x[1], x[2])
    assert np.isfinite(env).all() and (env[:, 0] < 0).sum() >= 3  # some points inside
    return dict(env=env, ell=ell)


def _kernel(s, X, row, env, ell):
    i = cuda.grid(1)
    if i < X.shape[0]:
        a, b, c, d = env_t(s, X[i, 0], X[i, 1], X[i, 2], s.env_all)
        env[i, 0], env[i, 1], env[i, 2], env[i, 3] = a, b, c, d
        a, b, c, d = ell_t(row, X[i, 0], X[i, 1], X[i, 2])
        ell[i, 0], ell[i, 1], ell[i, 2], ell[i, 3] = a, b, c, d


def gpu_outputs() -> dict:
    global env_t, ell_t
    from pbsim.jit import cuda_twin

    ks, X, row = setup()
    env_t, ell_t = cuda_twin(env_sdf), cuda_twin(sdf_ellipsoid)
    env, ell = np.zeros((len(X), 4)), np.zeros((len(X), 4))
    cuda.jit(_kernel)[1, len(X)](ks, X, row, env, ell)
    return dict(env=env, ell=ell)


if __name__ == "__main__":
    if len(sys.argv) > 1:
        with np.load(sys.argv[1]) as f:
            cpu = dict(f)
    else:
        cpu = cpu_outputs()
    gpu = gpu_outputs()
    for name in NAMES:
        print("DIFF", name, float(np.abs(cpu[name] - gpu[name]).max()), float(np.abs(cpu[name]).max()))
