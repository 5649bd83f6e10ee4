"""Cost of equality constraints in the explicit steps: wall time per step of a model with two
constraints against the same model with them inactive (no rows), for euler and rk4.

The models (``--models``): ``chains``, two hanging 6-link chains (12 hinges) whose links are tied
by two constraints of one kind each (``connect``: 3 rows each, of which the out-of-plane ones are
dropped; ``weld``: 6 rows each; ``joint``: 1 row each), so that every body lies on a constrained
body's path to the root (the worst case for the O(n) response per row); ``humanoid``, gymnasium's
humanoid (27 DOF) held by two constraints of each kind (hands at two world points, feet welded to
the ground, knees and elbows coupled), contact off.  Prints a table (us/step, ratio to the unconstrained step,
max violation over the run) and writes a PNG of the ratios.  The peer in the same run: MuJoCo on
the same two models with the same integrator and step (``Euler``, 1 ms; its soft constraints
solved by its default Newton solver), timed the same way (``--no-mujoco`` skips it).  The two
models run alternately, ``--repeats`` times each; the table holds the medians (the ratio: the median of the pairs' ratios,
which a noisy machine disturbs least).

    python scripts/bench/bench_equality.py [--steps 20000] [--repeats 7] [--methods euler rk4] [--png bench_equality.png]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np

import pbsim
from pbsim.dynamics.equality import equality_residual


def chain_xml(name: str, x: float, n: int = 6) -> str:
    body, close = "", ""
    for i in range(n):
        pos = f"{x} 0 0" if i == 0 else "0 0 -0.1"
        body += (
            f'<body name="{name}{i}" pos="{pos}">'
            f'<joint name="{name}j{i}" axis="0 1 0" damping="0.01"/>'
            f'<geom type="capsule" fromto="0 0 0 0 0 -0.1" size="0.01"/>'
        )
        close += "</body>"
    return body + close


def model_xml(kind: str, active: bool) -> str:
    a = "" if active else ' active="false"'
    eq = {
        "connect": f'<connect body1="a5" body2="b5" anchor="0.1 0 -0.1"{a}/>'
        f'<connect body1="a3" body2="b3" anchor="0.1 0 -0.1"{a}/>',
        "weld": f'<weld body1="a5" body2="b5"{a}/><weld body1="a2" body2="b2"{a}/>',
        "joint": f'<joint joint1="aj1" joint2="bj1" polycoef="0 1 0 0 0"{a}/>'
        f'<joint joint1="aj4" joint2="bj4" polycoef="0 -1 0 0 0"{a}/>',
    }[kind]
    return (
        '<mujoco><option><flag contact="disable"/></option><worldbody>'
        + chain_xml("a", 0.0)
        + chain_xml("b", 0.1)
        + f"</worldbody><equality>{eq}</equality></mujoco>"
    )


# the gymnasium humanoid (27 DOF, a free root) held by two constraints of one kind: the hands at
# their qpos0 points in the world (hanging from two handles), the feet welded where they stand,
# knees and elbows coupled pairwise; contact off, Euler at 1 ms for both simulators
HUMANOID_EQ = {
    "connect": '<connect body1="right_lower_arm" anchor=".18 .18 .18"{a}/>'
    '<connect body1="left_lower_arm" anchor=".18 -.18 .18"{a}/>',
    "weld": '<weld body1="right_foot"{a}/><weld body1="left_foot"{a}/>',
    "joint": '<joint joint1="left_knee" joint2="right_knee" polycoef="0 1 0 0 0"{a}/>'
    '<joint joint1="left_elbow" joint2="right_elbow" polycoef="0 1 0 0 0"{a}/>',
}


def humanoid_xml(kind: str, active: bool) -> str:
    from pathlib import Path

    import gymnasium

    text = (Path(gymnasium.__file__).parent / "envs/mujoco/assets/humanoid.xml").read_text()
    opt = '<option integrator="RK4" iterations="50" solver="PGS" timestep="0.003">'
    assert opt in text, "gymnasium's humanoid.xml changed"
    text = text.replace(opt, '<option timestep="0.001"><flag contact="disable"/>')
    eq = HUMANOID_EQ[kind].format(a="" if active else ' active="false"')
    return text.replace("</mujoco>", f"<equality>{eq}</equality></mujoco>")


MODELS = {"chains": model_xml, "humanoid": humanoid_xml}


def load(xml: str):
    with tempfile.NamedTemporaryFile("w", suffix=".xml", delete=False) as f:
        f.write(xml)
    try:
        return pbsim.load(f.name)
    finally:
        os.unlink(f.name)


def start(model, integ: str, dt: float = 1e-3):
    """The initial configuration (on the constraints), after a short compiling run."""
    q0 = model.default_configuration()
    q0[0] = 0.3  # start off the rest pose
    q0 = project(model, q0)
    pbsim.rollout(model, integ, dt=dt, steps=10, q0=q0)  # compile
    return q0


def run_time(model, integ: str, steps: int, q0, dt: float = 1e-3):
    """(seconds per step, trajectory) of one run."""
    t = time.perf_counter()
    tr = pbsim.rollout(model, integ, dt=dt, steps=steps, q0=q0, record_every=steps // 10)
    return (time.perf_counter() - t) / steps, tr


def per_step(on, off, integ: str, steps: int, repeats: int):
    """Median us/step of the tied and the free model, the median of their ratios (runs alternate)
    and the tied run's max violation."""
    q_on, q_off = start(on, integ), start(off, integ)
    t_on, t_off, ratio = [], [], []
    for _ in range(repeats):
        a, tr = run_time(on, integ, steps, q_on)
        c, _ = run_time(off, integ, steps, q_off)
        t_on.append(a)
        t_off.append(c)
        ratio.append(a / c)
    viol = max(np.abs(equality_residual(on, q)[0]).max() for q in tr.q) if on.neq_rows else 0.0
    return np.median(t_off) * 1e6, np.median(t_on) * 1e6, float(np.median(ratio)), viol


def mujoco_per_step(kind: str, steps: int, repeats: int, xml_of=model_xml):
    """MuJoCo's median us/step of the tied and the free model (semi-implicit Euler, 1 ms, the same
    start) and the median of the pairs' ratios; None without mujoco."""
    try:
        import mujoco
    except ImportError:
        return None

    def make(active):
        m = mujoco.MjModel.from_xml_string(xml_of(kind, active))
        m.opt.integrator = mujoco.mjtIntegrator.mjINT_EULER
        m.opt.timestep = 0.001
        d = mujoco.MjData(m)
        d.qpos[0] = 0.3
        mujoco.mj_step(m, d, 10)
        return m, d

    return time_mujoco_pair(make(True), make(False), steps, repeats)


def time_mujoco_pair(on, off, steps: int, repeats: int):
    """MuJoCo's median us/step of two ``(MjModel, MjData)`` run alternately, ``repeats`` times
    ``steps`` steps each: ``(off, on, the median of the pairs' on/off ratios)``."""
    import mujoco

    t_on, t_off, ratio = [], [], []
    for _ in range(repeats):
        ts = []
        for m, d in (on, off):
            t = time.perf_counter()
            mujoco.mj_step(m, d, steps)
            ts.append((time.perf_counter() - t) / steps)
        t_on.append(ts[0])
        t_off.append(ts[1])
        ratio.append(ts[0] / ts[1])
    return np.median(t_off) * 1e6, np.median(t_on) * 1e6, float(np.median(ratio))


def project(model, q, iters: int = 20):
    """A configuration on the constraints near ``q`` (least-squares Newton with J's pseudo-inverse)."""
    if not model.neq_rows:
        return q
    for _ in range(iters):
        phi, J, _ = equality_residual(model, q)
        q = pbsim.integrate(model, q, -np.linalg.lstsq(J, phi, rcond=1e-10)[0])
    return q


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=20000)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--methods", nargs="+", default=["euler", "rk4"])
    ap.add_argument("--png", default="bench_equality.png")
    ap.add_argument(
        "--models",
        nargs="+",
        default=list(MODELS),
        choices=list(MODELS),
        help="chains: two 6-link chains tied at their links (every body on a constrained path); "
        "humanoid: gymnasium's humanoid held by two constraints",
    )
    ap.add_argument("--no-mujoco", action="store_true", help="skip the MuJoCo peer")
    a = ap.parse_args(argv)
    rows, peer = [], {}
    for name in a.models:
        for kind in ("joint", "connect", "weld"):
            xml_of = MODELS[name]
            on, off = load(xml_of(kind, True)), load(xml_of(kind, False))
            for integ in a.methods:
                t_off, t_on, r, viol = per_step(on, off, integ, a.steps, a.repeats)
                rows.append((name, kind, on.neq_rows, integ, t_off, t_on, r, viol))
            if not a.no_mujoco:
                peer[name, kind] = mujoco_per_step(kind, a.steps, a.repeats, xml_of)
    print(
        f"{'model':<9} {'constraints':<12} {'rows':>4} {'method':<6} {'free us/step':>12} {'tied us/step':>12} "
        f"{'ratio':>6} {'max violation':>14}"
    )
    for name, kind, k, integ, t0, t1, r, v in rows:
        print(f"{name:<9} 2 x {kind:<8} {k:>4} {integ:<6} {t0:>12.2f} {t1:>12.2f} {r:>6.2f} {v:>14.2e}")
    for (name, kind), p in peer.items():
        if p is not None:
            print(
                f"{name:<9} 2 x {kind:<8} {'':>4} {'MuJoCo':<6} {p[0]:>12.2f} {p[1]:>12.2f} {p[2]:>6.2f}  (Euler, 1 ms)"
            )
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(3 + 1.2 * len(rows), 3.5))
        labels = [f"{name}\n{kind}\n{integ}" for name, kind, _, integ, *_ in rows]
        ax.bar(labels, [r[6] for r in rows])
        ax.axhline(1.5, color="r", ls="--", label="target 1.5x (euler)")
        ax.set_ylabel("step cost / unconstrained")
        ax.legend()
        fig.tight_layout()
        fig.savefig(a.png, dpi=100)
        print(f"wrote {a.png}")
    except ImportError:
        pass


if __name__ == "__main__":
    main()
