"""Contact queries per second against drc_rough_terrain.stl: grid SDF (1 thread / all cores) vs
trimesh's exact signed_distance, grid memory.  Prints a table, writes out/bench_contact.png."""

import os
import sys
import time
from pathlib import Path

import numba
import numpy as np
import trimesh

from pbsim.contact import MeshTerrain
from pbsim.contact.environment import pack_environment
from pbsim.contact.query import env_sdf_points
from pbsim.contact.scene import make_kscene

f = Path(
    sys.argv[1]
    if len(sys.argv) > 1
    else Path(__file__).resolve().parents[2].parent / "shared/robots/robosimian/terrains/drc_rough_terrain.stl"
)
h = float(sys.argv[2]) if len(sys.argv) > 2 else 0.02
t = time.perf_counter()
T = MeshTerrain.from_file(f, spacing=h)
tb = time.perf_counter() - t
ks = make_kscene(
    0, np.zeros(0, np.int32), np.zeros((0, 3)), np.zeros(0), np.zeros(0), np.zeros(0), 0.0, 0.01, pack_environment([T])
)
mesh = trimesh.load(str(f), force="mesh")
lo, hi = mesh.bounds
rng = np.random.default_rng(0)
rows = []
ncores = numba.config.NUMBA_NUM_THREADS
for n in (10_000, 1_000_000):
    X = rng.uniform(lo, hi, (n, 3))
    out = np.zeros((n, 4))
    env_sdf_points(ks, X[:10], out[:10])
    for threads in (1, ncores):
        numba.set_num_threads(threads)
        t = time.perf_counter()
        env_sdf_points(ks, X, out)
        dt = time.perf_counter() - t
        rows.append((n, f"grid SDF, {threads} thread(s)", n / dt))
numba.set_num_threads(ncores)
m = 2000
Xs = rng.uniform(lo, hi, (m, 3))
t = time.perf_counter()
trimesh.proximity.signed_distance(mesh, Xs)
rt = m / (time.perf_counter() - t)
rows.append((m, "trimesh signed_distance (exact)", rt))
print(
    f"terrain {f.name}: {T.ntri} triangles, grid {T.phi.shape} spacing {h} m, "
    f"memory {T.nbytes / 2**20:.1f} MiB (build peak {2 * T.nbytes / 2**20:.1f} MiB), build {tb:.1f} s, "
    f"bound {T.bound * 1000:.1f} mm"
)
print("| points | method | queries/s | ratio vs trimesh |\n|---|---|---|---|")
for n, meth, r in rows:
    print(f"| {n} | {meth} | {r:.3g} | {r / rt:.0f}x |")
os.makedirs("out", exist_ok=True)
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

plt.figure(figsize=(7, 3))
plt.barh([f"{m_} {n}" for n, m_, _ in rows], [r for *_, r in rows])
plt.xscale("log")
plt.xlabel("queries / s")
plt.tight_layout()
plt.savefig("out/bench_contact.png", dpi=100)
