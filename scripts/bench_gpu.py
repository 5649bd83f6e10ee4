"""GPU vs CPU all-core throughput of batched rollouts (issue 8).

Prints one table: steps/s (summed over the batch) and realtime factor (= steps/s x dt, simulated
seconds per wall second) for
  (a) DeepMimic humanoid (pybullet_data humanoid/humanoid.urdf, floating base, 34 DOF),
      semi-implicit Euler + stable PD (MABA), optional plane contact, dt = 5 ms;
  (b) the same robot with PBAD at dt = 0.05 (when a ``pbad`` integrator is registered);
  (c) 40-link revolute chain with PBAD at dt = 0.05 (idem);
  (d) the same chain with semi-implicit Euler at dt = 2 ms (MJX's 40-link-chain reference);
for batches 1k..64k on the GPU (numba-cuda, one thread per trajectory, state kept on the device,
``--steps-per-launch`` steps per kernel launch) and on the CPU (numba prange over the batch, all
cores, same in-call step loop), with the device name, and the GPU/CPU ratio at each batch.

Installs nothing.  Without a GPU the GPU rows say why and the CPU rows are still measured.
    python scripts/bench_gpu.py                       # full table (run on the GPU machine)
    python scripts/bench_gpu.py --batches 1024 --min-time 0.2 --cases a   # quick
    NUMBA_ENABLE_CUDASIM=1 python scripts/bench_gpu.py --batches 4 --min-time 0 --cases a,c  # smoke test
Writes out/bench_gpu.png (steps/s vs batch).
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for p in (ROOT, ROOT / "models"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

import numpy as np  # noqa: E402

import pbsim  # noqa: E402
from pbsim.backends import cuda as pc  # noqa: E402
from pbsim.backends.cpu import CpuBatch  # noqa: E402
from pbsim.integrators import State, available, make  # noqa: E402


def humanoid_path():
    try:
        import pybullet_data
    except ImportError:
        return None
    p = os.path.join(pybullet_data.getDataPath(), "humanoid", "humanoid.urdf")
    return p if os.path.isfile(p) else None


def humanoid_setup(contact: bool):
    """Model, initial state (upright: the file is y-up, pbsim's gravity is -z), SPD control holding
    the initial pose (DeepMimic-like gains kp 1000, kd 100 on the joints, none on the base),
    and a Scene with the ground plane under the feet's box corners (if asked for)."""
    m = pbsim.load(humanoid_path(), floating_base=True)
    q0 = m.default_configuration()
    q0[3:7] = [math.cos(math.pi / 4), math.sin(math.pi / 4), 0.0, 0.0]  # +90 deg about x: y-up -> z-up
    # feet: box (0.354 x 0.11 x 0.18) centred at (0.18, -0.09, 0) in the ankle frames
    feet = [m.body_names.index(n) for n in ("right_ankle", "left_ankle")]
    corners = np.array([[0.18 + sx * 0.177, -0.09 - 0.055, sz * 0.09] for sx in (-1, 1) for sz in (-1, 1)])
    T = pbsim.forward_kinematics(m, q0)
    zmin = min((T[f, :3, :3] @ c + T[f, :3, 3])[2] for f in feet for c in corners)
    q0[2] -= zmin  # feet on z = 0
    kp = np.full(m.nv, 1000.0)
    kd = np.full(m.nv, 100.0)
    kp[:6] = kd[:6] = 0.0
    ctrl = pbsim.Control(mode="spd", kp=kp, kd=kd, q_ref=q0.copy())
    scene = None
    note = "no contact"
    if contact:
        scene = pbsim.Scene(ground=True, stiffness=1e5, damping=1e3, mu=0.9,
                            points_body=np.repeat(np.array(feet, np.int32), 4),
                            points_local=np.tile(corners, (2, 1)), points_radius=np.zeros(8))
        note = "plane, 8 foot points" if contact_active(m, q0, ctrl, scene) else \
            "plane scene given, but pbsim.contact adds no force yet (stub)"
    return m, q0, ctrl, scene, note


def contact_active(m, q0, ctrl, scene) -> bool:
    """Does the penalty contact of this pbsim change the dynamics? (one CPU step, feet 5 cm deep)"""
    q = q0.copy()
    q[2] -= 0.05
    a = make("euler", m, scene).step(State.make(m, q), ctrl, 1e-3)[0]
    b = make("euler", m, None).step(State.make(m, q), ctrl, 1e-3)[0]
    return not np.allclose(a.v, b.v, rtol=0, atol=1e-12)


def batch_state(m, q0, B, rng):
    """B copies of q0 with small joint perturbations (threads do not all compute the same)."""
    Q = np.tile(q0, (B, 1))
    V = 0.01 * rng.standard_normal((B, m.nv))
    return Q, V


def timed(sim, dt, min_time, max_steps, steps_per_launch):
    """steps/s of ``sim`` (CudaBatch or CpuBatch), after one warm-up (compilation) call."""
    sim.advance(1, dt)
    sim.synchronize()
    n = 1
    while True:
        t0 = time.perf_counter()
        done = 0
        while done < n:
            k = min(steps_per_launch, n - done)
            sim.advance(k, dt)
            done += k
        sim.synchronize()
        el = time.perf_counter() - t0
        if el >= min_time or n >= max_steps:
            return sim.B * n / el, n, el
        n = min(max_steps, max(2 * n, int(n * 1.2 * min_time / max(el, 1e-6)) + 1))


def cpu_generic(m, integ, scene, ctrl, Q, V, dt, min_time, max_steps):
    """CPU path of an integrator without a CpuBatch driver (e.g. pbad): its own batched step()."""
    I = make(integ, m, scene)
    st = State.make(m, Q, V)
    st, _ = I.step(st, ctrl, dt)  # warm-up / compile
    n = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            st, _ = I.step(st, ctrl, dt)
        el = time.perf_counter() - t0
        if el >= min_time or n >= max_steps:
            return Q.shape[0] * n / el, n, el
        n = min(max_steps, max(2 * n, int(n * 1.2 * min_time / max(el, 1e-6)) + 1))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batches", default="1024,2048,4096,8192,16384,32768,65536")
    ap.add_argument("--cases", default="a,b,c,d",
                    help="a: humanoid euler+SPD, b: humanoid pbad, c: chain40 pbad, d: chain40 euler dt 2 ms")
    ap.add_argument("--layouts", default="aos,soa", help="GPU storage layouts to measure")
    ap.add_argument("--tpb", type=int, default=128, help="CUDA threads per block")
    ap.add_argument("--min-time", type=float, default=0.5, help="seconds per measurement")
    ap.add_argument("--max-steps", type=int, default=2000, help="cap on steps per measurement")
    ap.add_argument("--steps-per-launch", type=int, default=100)
    ap.add_argument("--no-contact", action="store_true")
    ap.add_argument("--no-cpu", action="store_true")
    ap.add_argument("--png", default=str(ROOT / "out" / "bench_gpu.png"))
    args = ap.parse_args(argv)
    batches = [int(b) for b in args.batches.split(",")]
    cases = args.cases.split(",")
    layouts = args.layouts.split(",")
    rng = np.random.default_rng(0)
    import numba

    gpu_ok, gpu_name = pc.device_status()
    if gpu_ok and pc.simulated() and max(batches) > 64:
        print("note: CUDA simulator: use tiny --batches (it runs Python-speed)")
    print(f"GPU: {gpu_name}")
    print(f"CPU: {os.cpu_count()} logical cores, numba threads {numba.config.NUMBA_NUM_THREADS} "
          f"(NUMBA_NUM_THREADS), numba {numba.__version__}, numpy {np.__version__}")
    has_pbad = "pbad" in available()
    gpu_integs = pc.supported_integrators() if gpu_ok else []
    rows, notes, series = [], [], {}

    setups = []
    if "a" in cases or "b" in cases:
        if humanoid_path() is None:
            notes.append("(a)/(b) skipped: pybullet_data humanoid/humanoid.urdf not found")
        else:
            m, q0, ctrl, scene, cnote = humanoid_setup(not args.no_contact)
            if "a" in cases:
                setups.append(("a humanoid", m, q0, ctrl, scene, "euler", 0.005, cnote))
            if "b" in cases:
                setups.append(("b humanoid", m, q0, ctrl, scene, "pbad", 0.05, cnote))
    if "c" in cases or "d" in cases:
        import pbsim_models

        mc = pbsim_models.chain(40)
        if "c" in cases:
            setups.append(("c chain40", mc, mc.neutral(), pbsim.Control(), None, "pbad", 0.05, "no contact"))
        if "d" in cases:
            setups.append(("d chain40", mc, mc.neutral(), pbsim.Control(), None, "euler", 0.002, "no contact"))

    for label, m, q0, ctrl, scene, integ, dt, cnote in setups:
        if integ == "pbad" and not has_pbad:
            notes.append(f"({label[0]}) skipped: no 'pbad' integrator registered in this pbsim")
            continue
        notes.append(f"({label[0]}) {label[2:]}: nq={m.nq} nv={m.nv} nb={m.nb}, {integ}, dt={dt:g}, {cnote}")
        # correctness check, GPU vs CPU, before timing
        if gpu_ok and integ in gpu_integs:
            Bc = min(batches)
            Q, V = batch_state(m, q0, Bc, rng)
            g = pc.CudaBatch(m, integ, scene, Bc, threads=args.tpb)
            g.set_state(Q, V)
            g.set_control(ctrl)
            g.advance(5, dt)
            I = make(integ, m, scene)
            st = State.make(m, Q, V)
            for _ in range(5):
                st, _ = I.step(st, ctrl, dt)
            gq, gv = g.state()
            err = max(np.abs(gq - st.q).max() / max(1, np.abs(st.q).max()),
                      np.abs(gv - st.v).max() / max(1, np.abs(st.v).max()))
            notes.append(f"({label[0]}) GPU vs CPU integrator after 5 steps, B={Bc}: max rel diff {err:.2e}")
        for B in batches:
            Q, V = batch_state(m, q0, B, rng)
            cpu_rate = None
            if not args.no_cpu:
                if integ in ("euler", "rk2", "rk3", "rk4", "explicit_euler"):
                    cb = CpuBatch(m, integ, scene, B)
                    cb.set_state(Q, V)
                    cb.set_control(ctrl)
                    cpu_rate, n, el = timed(cb, dt, args.min_time, args.max_steps, args.steps_per_launch)
                    del cb
                else:
                    cpu_rate, n, el = cpu_generic(m, integ, scene, ctrl, Q, V, dt, args.min_time, args.max_steps)
                rows.append((label, integ, dt, B, "cpu", f"{numba.config.NUMBA_NUM_THREADS} thr", cpu_rate,
                             cpu_rate * dt, "", n))
                series.setdefault((label, "cpu"), []).append((B, cpu_rate))
            if not gpu_ok:
                rows.append((label, integ, dt, B, "gpu", "-", None, None, "no GPU", 0))
                continue
            if integ not in gpu_integs:
                rows.append((label, integ, dt, B, "gpu", "-", None, None, "no CUDA stepper", 0))
                continue
            for lay in layouts:
                try:
                    g = pc.CudaBatch(m, integ, scene, B, layout=lay, threads=args.tpb)
                    g.set_state(Q, V)
                    g.set_control(ctrl)
                    rate, n, el = timed(g, dt, args.min_time, args.max_steps, args.steps_per_launch)
                    del g
                except Exception as e:  # noqa: BLE001 - report (e.g. out of memory) and go on
                    rows.append((label, integ, dt, B, "gpu", lay, None, None, f"{type(e).__name__}: {e}"[:60], 0))
                    continue
                ratio = f"{rate / cpu_rate:.1f}x" if cpu_rate else ""
                rows.append((label, integ, dt, B, "gpu", lay, rate, rate * dt, ratio, n))
                series.setdefault((label, f"gpu {lay}"), []).append((B, rate))

    hdr = "| case | integrator | dt | batch | device | layout | steps/s | realtime x | GPU/CPU | steps timed |"
    print()
    print(hdr)
    print("|" + "---|" * 10)
    for label, integ, dt, B, dev, lay, rate, rtf, ratio, n in rows:
        r = f"{rate:,.0f}" if rate else "-"
        x = f"{rtf:,.0f}" if rtf else "-"
        print(f"| {label} | {integ} | {dt:g} | {B} | {dev} | {lay} | {r} | {x} | {ratio} | {n} |")
    print()
    for n in notes:
        print(n)
    print("reference (issue 8, H100, MJX 3.17, humanoid dt 5 ms, B 32768): 6.64 M steps/s fp32 (33,189x), "
          "3.21 M steps/s fp64; bar: >= 3 M steps/s fp64 euler+MABA, GPU >= 20x CPU at B 16k")
    if series:
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt

            fig, ax = plt.subplots(figsize=(7, 4.5))
            for (label, dev), pts in series.items():
                pts = np.array(pts)
                ax.loglog(pts[:, 0], pts[:, 1], "o-" if dev.startswith("gpu") else "s--", label=f"{label} {dev}")
            ax.set_xlabel("batch (trajectories)")
            ax.set_ylabel("steps/s (summed over batch)")
            ax.set_title(f"pbsim batched rollouts: {gpu_name[:50]}")
            ax.legend(fontsize=7)
            ax.grid(True, which="both", alpha=0.3)
            Path(args.png).parent.mkdir(parents=True, exist_ok=True)
            fig.tight_layout()
            fig.savefig(args.png, dpi=120)
            print(f"wrote {args.png}")
        except ImportError:
            print("matplotlib not installed: no PNG")


if __name__ == "__main__":
    main()
