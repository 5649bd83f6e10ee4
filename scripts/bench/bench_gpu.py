"""GPU vs CPU all-core throughput of batched rollouts (issue 8).

Prints one table: steps/s (summed over the batch) and realtime factor (= steps/s x dt, simulated
seconds per wall second) for
  (a) DeepMimic humanoid (pybullet_data humanoid/humanoid.urdf, floating base, 34 DOF, y-up),
      semi-implicit Euler + stable PD (MABA) + plane contact (make_scene, ground="plane"), dt = 5 ms;
  (b) the same robot with PBAD (order 2, LM) at dt = 0.05, no contact;
  (c) 40-link revolute chain with PBAD at dt = 0.05;
  (d) the same chain with semi-implicit Euler at dt = 2 ms (MJX's 40-link-chain reference);
  (g) gymnasium's humanoid.xml (``--mjcf PATH``: 23 DOF, its own floor through
      ``default_scene``), passive from qpos0 with 0.01 rad/s random joint velocities, for each of
      ``--integrators`` (default euler at dt 5 ms, pbad / pbfd / nmdp at dt 20 ms): the
      measurement of docs/benchmarks/gpu.md's H200 table;
for batches 1k..64k on the GPU (numba-cuda, one thread per trajectory, state kept on the device,
``--steps-per-launch`` steps per kernel launch; PBAD both with the LM loop inside the kernel and
with one LM iteration per launch, ``--schedules``) and on the CPU (numba prange over the batch, all
cores, same in-call step loop), with the device name, and the GPU/CPU ratio at each batch.

Installs nothing.  Without a GPU the GPU rows say why and the CPU rows are still measured.
    python scripts/bench/bench_gpu.py                       # full table (run on the GPU machine)
    python scripts/bench/bench_gpu.py --batches 1024 --min-time 0.2 --cases a   # quick
    NUMBA_ENABLE_CUDASIM=1 python scripts/bench/bench_gpu.py --batches 4 --min-time 0 --cases a,c  # smoke test
Writes out/bench_gpu.png (steps/s vs batch).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
for p in (ROOT, ROOT / "models"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

import numpy as np  # noqa: E402

import pbsim  # noqa: E402
from pbsim.backends import cuda as pc  # noqa: E402
from pbsim.backends.cpu import CpuBatch  # noqa: E402
from pbsim.integrators import State, make  # noqa: E402


def humanoid_path(override=None):
    if override:
        return override if os.path.isfile(override) else None
    try:
        import pybullet_data
    except ImportError:
        return None
    p = os.path.join(pybullet_data.getDataPath(), "humanoid", "humanoid.urdf")
    return p if os.path.isfile(p) else None


def humanoid_setup(path, contact: bool):
    """Model (y-up as in the file: gravity set to (0, -9.81, 0)), initial pose standing with the
    lowest contact point on the plane y = 0, SPD control holding it (DeepMimic-like gains kp 1000,
    kd 100 on the joints, none on the base) and ``make_scene(model, ground="plane")`` (the
    contact module's sampled points, default penalty parameters) if asked for."""
    from pbsim.contact import make_scene
    from pbsim.contact.points import sample_contact_points

    m = pbsim.load(path, floating_base=True)
    m.gravity[:] = (0.0, -9.81, 0.0)  # the DeepMimic humanoid is y-up
    q0 = m.default_configuration()
    pts = sample_contact_points(m)
    T = pbsim.forward_kinematics(m, q0)
    low = min((T[b, :3, :3] @ p + T[b, :3, 3])[1] - r for b, p, r in zip(pts.body, pts.local, pts.radius))
    q0[1] -= low  # lowest contact sphere touches y = 0
    kp = np.full(m.nv, 1000.0)
    kd = np.full(m.nv, 100.0)
    kp[:6] = kd[:6] = 0.0
    ctrl = pbsim.Control(mode="spd", kp=kp, kd=kd, q_ref=q0.copy())
    scene, note = None, "no contact"
    if contact:
        scene = make_scene(m, ground="plane", points=pts)
        note = f"plane contact, {len(pts)} sampled points"
        if not contact_active(m, q0, ctrl, scene):
            note += " (WARNING: contact adds no force)"
    return m, q0, ctrl, scene, note


def contact_active(m, q0, ctrl, scene) -> bool:
    """Does the penalty contact change the dynamics? (one CPU step, 5 cm into the plane)"""
    q = q0.copy()
    q[1] -= 0.05
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
    ap.add_argument(
        "--cases",
        default="a,b,c,d",
        help="a: humanoid euler+SPD, b: humanoid pbad, c: chain40 pbad, d: chain40 euler dt 2 ms, "
        "g: gymnasium humanoid + floor (--mjcf) for --integrators",
    )
    ap.add_argument("--layouts", default="aos,soa", help="GPU storage layouts to measure")
    ap.add_argument(
        "--schedules",
        default="kernel,launch",
        help="pbad on the GPU: kernel = LM loop inside the kernel, launch = one LM iteration per launch",
    )
    ap.add_argument("--humanoid", default=None, help="path of humanoid.urdf (default: pybullet_data's)")
    ap.add_argument("--mjcf", default=None, help="case g: path of gymnasium's humanoid.xml")
    ap.add_argument(
        "--integrators", default="euler,pbad,pbfd,nmdp", help="case g: methods (dt 5 ms for euler, else 20 ms)"
    )
    ap.add_argument("--tpb", type=int, default=pc.DEFAULT_TPB, help="CUDA threads per block")
    ap.add_argument("--min-time", type=float, default=0.5, help="seconds per measurement")
    ap.add_argument("--max-steps", type=int, default=2000, help="cap on steps per measurement")
    ap.add_argument("--steps-per-launch", type=int, default=100)
    ap.add_argument("--no-contact", action="store_true")
    ap.add_argument(
        "--no-body-contact",
        action="store_true",
        help="case g: the floor only (body_contact=False), as measured before contact between bodies existed",
    )
    ap.add_argument("--no-cpu", action="store_true")
    ap.add_argument("--no-check", action="store_true", help="skip the GPU vs CPU check before timing")
    ap.add_argument("--png", default=str(ROOT / "out" / "bench_gpu.png"))
    args = ap.parse_args(argv)
    batches = [int(b) for b in args.batches.split(",")]
    cases = args.cases.split(",")
    layouts = args.layouts.split(",")
    schedules = args.schedules.split(",")
    rng = np.random.default_rng(0)
    import numba

    gpu_ok, gpu_name = pc.device_status()
    if gpu_ok and pc.simulated() and max(batches) > 64:
        print("note: CUDA simulator: use tiny --batches (it runs Python-speed)")
    print(f"GPU: {gpu_name}")
    print(
        f"CPU: {os.cpu_count()} logical cores, numba threads {numba.config.NUMBA_NUM_THREADS} "
        f"(NUMBA_NUM_THREADS), numba {numba.__version__}, numpy {np.__version__}"
    )
    gpu_integs = pc.supported_integrators() if gpu_ok else []
    rows, notes, series = [], [], {}

    setups = []
    if "a" in cases or "b" in cases:
        hp = humanoid_path(args.humanoid)
        if hp is None:
            notes.append("(a)/(b) skipped: humanoid.urdf not found (pybullet_data or --humanoid PATH)")
        else:
            m, q0, ctrl, scene, cnote = humanoid_setup(hp, not args.no_contact)
            if "a" in cases:
                setups.append(("a humanoid", m, q0, ctrl, scene, "euler", 0.005, cnote))
            if "b" in cases:  # pbad's own contact model does not read make_scene scenes: none here
                setups.append(
                    (
                        "b humanoid",
                        m,
                        q0,
                        ctrl,
                        None,
                        "pbad",
                        0.05,
                        "no contact (pbad does not use pbsim.contact scenes)",
                    )
                )
    if "c" in cases or "d" in cases:
        import pbsim_models

        mc = pbsim_models.chain(40)
        if "c" in cases:
            setups.append(("c chain40", mc, mc.neutral(), pbsim.Control(), None, "pbad", 0.05, "no contact"))
        if "d" in cases:
            setups.append(("d chain40", mc, mc.neutral(), pbsim.Control(), None, "euler", 0.002, "no contact"))

    if "g" in cases:
        if not (args.mjcf and os.path.isfile(args.mjcf)):
            notes.append("(g) skipped: no --mjcf PATH of gymnasium's humanoid.xml")
        else:
            from pbsim.contact import default_scene

            mg = pbsim.load(args.mjcf)
            sg = default_scene(mg, body_contact=False) if args.no_body_contact else default_scene(mg)
            npts = getattr(sg.kernel_arrays(mg), "npts", "?")
            bodies = "floor only (no contact between bodies)" if args.no_body_contact else "and contact between bodies"
            for integ in args.integrators.split(","):
                dtg = 0.005 if integ in ("euler", "rk4") else 0.02
                setups.append(
                    (
                        "g gym-humanoid",
                        mg,
                        mg.default_configuration(),  # qpos0: standing above its floor
                        pbsim.Control(),
                        sg,
                        integ,
                        dtg,
                        f"its floor (default_scene), {npts} contact points, {bodies}",
                    )
                )
    for label, m, q0, ctrl, scene, integ, dt, cnote in setups:
        notes.append(f"({label[0]}) {label[2:]}: nq={m.nq} nv={m.nv} nb={m.nb}, {integ}, dt={dt:g}, {cnote}")
        # correctness check, GPU vs CPU, before timing
        if gpu_ok and integ in gpu_integs and not args.no_check:
            Bc = min(min(batches), 64)  # a small batch: the CPU reference steps it too
            Q, V = batch_state(m, q0, Bc, rng)
            I = make(integ, m, scene)
            st = State.make(m, Q, V)
            for _ in range(5):
                st, d = I.step(st, ctrl, dt)
            for sched in schedules if integ == "pbad" else ["kernel"]:
                g = pc.CudaBatch(m, integ, scene, Bc, threads=args.tpb, schedule=sched)
                g.set_state(Q, V)
                g.set_control(ctrl)
                g.advance(5, dt)
                gq, gv = g.state()
                err = max(
                    np.abs(gq - st.q).max() / max(1, np.abs(st.q).max()),
                    np.abs(gv - st.v).max() / max(1, np.abs(st.v).max()),
                )
                its = (
                    "" if d.iterations is None else f", CPU LM iterations in the last step {np.mean(d.iterations):.1f}"
                )
                notes.append(
                    f"({label[0]}) GPU ({sched}) vs CPU integrator after 5 steps, B={Bc}: max rel diff {err:.2e}{its}"
                )
        for B in batches:
            Q, V = batch_state(m, q0, B, rng)
            cpu_rate = None
            if not args.no_cpu:
                if integ in pc.supported_integrators() or not gpu_ok:
                    cb = CpuBatch(m, integ, scene, B)
                    cb.set_state(Q, V)
                    cb.set_control(ctrl)
                    cpu_rate, n, el = timed(cb, dt, args.min_time, args.max_steps, args.steps_per_launch)
                    del cb
                else:
                    cpu_rate, n, el = cpu_generic(m, integ, scene, ctrl, Q, V, dt, args.min_time, args.max_steps)
                rows.append(
                    (
                        label,
                        integ,
                        dt,
                        B,
                        "cpu",
                        f"{numba.config.NUMBA_NUM_THREADS} thr",
                        cpu_rate,
                        cpu_rate * dt,
                        "",
                        n,
                    )
                )
                series.setdefault((label, "cpu"), []).append((B, cpu_rate))
            if not gpu_ok:
                rows.append((label, integ, dt, B, "gpu", "-", None, None, "no GPU", 0))
                continue
            if integ not in gpu_integs:
                rows.append((label, integ, dt, B, "gpu", "-", None, None, "no CUDA stepper", 0))
                continue
            for lay, sched in [(la, sc) for la in layouts for sc in (schedules if integ == "pbad" else ["kernel"])]:
                try:
                    g = pc.CudaBatch(m, integ, scene, B, layout=lay, threads=args.tpb, schedule=sched)
                    g.set_state(Q, V)
                    g.set_control(ctrl)
                    rate, n, el = timed(g, dt, args.min_time, args.max_steps, args.steps_per_launch)
                    del g
                except Exception as e:  # noqa: BLE001 - report (e.g. out of memory) and go on
                    rows.append(
                        (label, integ, dt, B, "gpu", f"{lay}/{sched}", None, None, f"{type(e).__name__}: {e}"[:60], 0)
                    )
                    continue
                ratio = f"{rate / cpu_rate:.1f}x" if cpu_rate else ""
                rows.append((label, integ, dt, B, "gpu", f"{lay}/{sched}", rate, rate * dt, ratio, n))
                print(
                    f"row: {label} {integ} B={B} gpu {lay}/{sched}: {rate:,.0f} steps/s", flush=True
                )  # a timeout keeps it
                series.setdefault((label, f"gpu {lay}/{sched}"), []).append((B, rate))

    hdr = "| case | integrator | dt | batch | device | layout/schedule | steps/s | realtime x | GPU/CPU | steps timed |"
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
    print(
        "reference (issue 8, H100, MJX 3.17, humanoid dt 5 ms, B 32768): 6.64 M steps/s fp32 (33,189x), "
        "3.21 M steps/s fp64; bar: >= 3 M steps/s fp64 euler+MABA, GPU >= 20x CPU at B 16k"
    )
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
