"""Robosimian jump and walk of paper 002 (NMDP) Fig. 3-5 and Table I: notes/pbfd_nmdp.md B-T4..B-T8.

Robot: ``../shared/robots/robosimian/robosimian_caesar_new_all_active.urdf`` (32 revolute joints
+ free base, nv = 38, 99.9 kg: the paper's model), made mirror-symmetric by default (the file mounts
limbs 1 and 2 at yaw 3.1515926 instead of pi, a 0.01 rad typo that moves their feet 4-7 mm;
``--as-is`` keeps it), on a plane (mu 0.8), contact points on the four feet only (``limbN_link7``,
16 sampled points each, symmetric after the fix).  Motions: :func:`pbsim.control.motions.robosimian_jump`
(5 jumps in 10 s) and :func:`~pbsim.control.motions.robosimian_walk` (a trot), tracked by SPD with ``kp = 30 M`` (the
documented default) and ``kd = 0.3 M`` (``--kd-per-kg``; the default ``kd = M`` makes the legs so stiff over
a step that the kinetic-energy-minimising contact of ne_mdp/nmdp lets the feet sink into the ground
instead of launching the torso: no jump), passive root.

Per method and dt, every step: torso height, tilt (angle of the torso's z axis from vertical),
forward distance (torso x), outer iterations, smallest alpha of Algorithm 2, wall time.
Divergence: NaN, |tilt| > 30 deg, or the torso origin below the ground (a run stops there).
Printed: one row per run, the B-T4..B-T8 verdicts, Table I (resample to a 10 ms grid, std across
dt per time, averaged over time); written: docs/benchmarks/nmdp_robosimian_{tilt,height,walk}.png
(Fig. 3, 4, 5) and the raw series to --npz.

``--robot spider``: the same runs, verdicts and Table I for the generated ``pbsim_models.spider``
(paper 000's spider, free torso + 4 legs x 3 hinges, 4 kg), **our substitute for the paper's
Spider** (the paper does not describe it): plane (mu 0.8), the 16 contact points of
``pbsim_models.creatures.spider_contact_points`` (4 feet, 4 knees, 8 torso corners), the standing
pose on the plane, the motions :func:`~pbsim.control.motions.spider_jump` (5 jumps in 10 s) and
:func:`~pbsim.control.motions.spider_walk` (a trot), the same gains per kg; PNGs
docs/benchmarks/nmdp_spider_{tilt,height,walk}.png.  It needs nothing from ../shared.

    python scripts/figures/nmdp_robosimian.py [--robot robosimian|spider] [--methods nmdp,nmdp_zo,ne_mdp]
        [--dts 5,10,20,25,50] [--seconds 10] [--motions jump,walk] [--npz out.npz] [--plot-only out.npz]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "models")]

import pbsim  # noqa: E402
from pbsim.contact import make_scene, sample_contact_points  # noqa: E402
from pbsim.control import motions  # noqa: E402
from pbsim.integrators import State, available, make  # noqa: E402
from pbsim_models.poses import symmetrize_robosimian  # noqa: E402

SHARED = Path(os.environ.get("PBSIM_SHARED", ROOT.parent / "shared"))
URDF = SHARED / "robots" / "robosimian" / "robosimian_caesar_new_all_active.urdf"
MU = 0.8
KP_PER_KG = motions.KP_PER_KG  # 30: the documented default
KD_PER_KG = (
    0.3  # not the default 1.0: with kd = M the (N)MDP feet sink 6.7 cm instead of jumping (docs/benchmarks/nmdp.md)
)
TILT_MAX = 30.0  # deg: divergence
GRID = 0.01  # s: Table I's common grid
OUT = ROOT / "docs" / "benchmarks"
ROBOTS = ("robosimian", "spider")
LABEL = {"robosimian": "Robosimian", "spider": "spider (our substitute for the paper's Spider)"}
# method names of this script that are an integrator with options: ne_mdp with its stable PD at the
# new state (as nmdp's), the like-for-like baseline for Table I (the default ne_mdp is Tan's SPD)
# nmdp_step: nmdp with the kinetic energy in the step's metric (metric="step")
VARIANTS = {"ne_mdp_be": ("ne_mdp", {"spd": "backward"}), "nmdp_step": ("nmdp", {"metric": "step"})}
ORDER = ["nmdp", "nmdp_step", "nmdp_zo", "pbd_nmdp", "pbd_nmdp_zo", "ne_mdp", "ne_mdp_be"]


# ---------------------------------------------------------------- world
def build(as_is=False, robot="robosimian"):
    """(model, scene, q0): the standing pose with the lowest foot point on the plane z = 0."""
    if robot == "spider":
        import pbsim_models
        from pbsim.contact.points import ContactPoints
        from pbsim_models.creatures import spider_contact_points

        model = pbsim_models.spider()
        p = spider_contact_points(model)
        pts = ContactPoints(p["points_body"], p["points_local"], p["points_radius"])
        scene = make_scene(model, ground="plane", mu=MU, points=pts)
        q0 = motions.spider_jump(model).q_at(0.0)
    else:
        model = pbsim.load(str(URDF), floating_base=True)
        if not as_is:
            symmetrize_robosimian(model)
        pts = sample_contact_points(model, bodies=[f"limb{k}_link7" for k in range(1, 5)])
        scene = make_scene(model, ground="plane", mu=MU, points=pts)
        q0 = motions.robosimian_jump(model).q_at(0.0)
    q0[:3] = 0.0
    X = pbsim.contact_query(model, scene, q0)["X"][0]
    q0[2] = -float((X[:, 2] - scene.contact_points().radius).min())
    return model, scene, q0


def robot_of(model) -> str:
    return "spider" if model.name == "spider" else "robosimian"


def reference(model, motion, dt, kd_per_kg=None):
    M = float(model.total_mass)
    kd = (KD_PER_KG if kd_per_kg is None else kd_per_kg) * M
    name = f"{robot_of(model)}_{motion}"
    return motions.make_motion(model, name, kp=KP_PER_KG * M, kd=kd, root="passive", dt=dt)


def tilt_deg(q):
    """Angle between the torso's z axis and the world z [deg] (quaternion w, x, y, z)."""
    w, x, y, z = q[3:7]
    c = 1.0 - 2.0 * (x * x + y * y)
    return float(np.degrees(np.arccos(np.clip(c, -1.0, 1.0))))


def simulate(method, model, scene, q0, motion, dt, seconds, kd_per_kg=None, **opts):
    """One run: per-step series and whether (and why) it diverged."""
    ref = reference(model, motion, dt, kd_per_kg)
    name, extra = VARIANTS.get(method, (method, {}))
    if name in ("nmdp", "nmdp_zo", "ne_mdp", "pbd_nmdp", "pbd_nmdp_zo"):  # (a variant's name is one of these)
        opts = {"on_fail": "ignore", **extra, **opts}
    integ = make(name, model, scene, **opts)
    s = State.make(model, q0)
    n = int(round(seconds / dt))
    t, z, x, y, tilt, its, amin, wall, conv = [0.0], [q0[2]], [q0[0]], [q0[1]], [0.0], [], [], [], []
    why = ""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(n):
            c = ref(s.t, s)
            t0 = time.perf_counter()
            s, d = integ.step(s, c, dt)
            wall.append(time.perf_counter() - t0)
            q = s.q[0]
            if d.nan.any() or not np.isfinite(q).all():
                why = "NaN"
                break
            t.append(float(s.t))
            z.append(float(q[2]))
            x.append(float(q[0]))
            y.append(float(q[1]))
            tilt.append(tilt_deg(q))
            its.append(int(d.iterations[0]) if d.iterations is not None else 0)
            conv.append(bool(d.converged[0]) if d.converged is not None else True)
            amin.append(float(d.extra["min_alpha"][0]) if "min_alpha" in d.extra else 1.0)
            if tilt[-1] > TILT_MAX:
                why = f"tilt {tilt[-1]:.0f} deg"
                break
            if q[2] < 0.0:
                why = "torso below ground"
                break
    A = np.array
    return dict(robot=robot_of(model), method=method, motion=motion, dt=dt, t=A(t), z=A(z), x=A(x), y=A(y), tilt=A(tilt), its=A(its),
                amin=A(amin), wall=A(wall), conv=A(conv), why=why, n=n, done=len(t) - 1 == n and not why)  # fmt: skip


# ---------------------------------------------------------------- numbers
def apexes(r, period=2.0, push=0.8):
    """Torso apex height of each jump (the full periods simulated): the highest point from the
    push's start (``push`` s into the period: both jumps' ``t_crouch``) to the period's end.  (Over
    the whole period, the first one's maximum was the initial standing pose at t = 0, which is no
    jump; at 10-50 ms, where the push does not lift off, it stood 2-8 cm above every later apex.)"""
    out = []
    for k in range(int(r["t"][-1] / period + 1e-6)):
        sel = (r["t"] >= k * period + push) & (r["t"] < (k + 1) * period)
        if sel.any():
            out.append(float(r["z"][sel].max()))
    return np.array(out)


def on_grid(r, key, T):
    g = np.arange(0.0, T + 1e-9, GRID)
    return np.interp(g, r["t"], r[key] - (r[key][0] if key == "x" else 0.0))


def table_std(runs, key, T):
    """Mean over time of the std across dt (runs that completed), and the dts used."""
    ok = [r for r in runs if r["done"]]
    if len(ok) < 2:
        return np.nan, [r["dt"] for r in ok]
    Y = np.stack([on_grid(r, key, T) for r in ok])
    return float(Y.std(axis=0).mean()), [r["dt"] for r in ok]


def row(r, q0):
    ap = apexes(r) if r["motion"] == "jump" else np.array([])
    ap_s = f"{ap.min() - q0[2]:+.3f} .. {ap.max() - q0[2]:+.3f}" if len(ap) else "-"
    return (
        f"| {r['motion']} | {r['method']} | {r['dt'] * 1e3:g} | {'yes' if r['done'] else 'NO (' + r['why'] + ')'} | "
        f"{r['t'][-1]:.2f} | {r['tilt'].max():.3f} | {r['z'].max() - q0[2]:+.3f} | {r['z'].min() - q0[2]:+.3f} | "
        f"{ap_s} | {r['x'][-1] - r['x'][0]:+.3f} | {np.abs(r['y'][-1] - r['y'][0]):.3f} | "
        f"{r['its'].mean() if len(r['its']) else 0:.1f} / {r['its'].max() if len(r['its']) else 0} | "
        f"{r['amin'].min() if len(r['amin']) else 1:g} | {(r['amin'] < 1).mean() * 100 if len(r['amin']) else 0:.1f} | "
        f"{r['conv'].mean() * 100 if len(r['conv']) else 0:.1f} | {np.median(r['wall']) if len(r['wall']) else 0:.4f} |"
    )


HEAD = (
    "| motion | method | dt [ms] | finite, upright, full T | simulated [s] | max tilt [deg] | torso max / min vs stance [m] | "
    "jump apexes vs stance [m] | forward x [m] | lateral drift [m] | outer its mean / max | min alpha | steps sub-stepped [%] | "
    "converged [%] | median wall / step [s] |\n|---|---|---:|---|---:|---:|---|---|---:|---:|---|---:|---:|---:|---:|"
)


def verdicts(runs, q0, T, robot="robosimian"):
    by = {}
    for r in runs:
        by.setdefault((r["motion"], r["method"]), []).append(r)
    out = []

    def line(name, ok, text):
        out.append(f"{name}: {'PASS' if ok else 'FAIL' if ok is not None else 'n/a'} -- {text}")

    fo = [m for m in ("nmdp", "pbd_nmdp", "nmdp_step") if ("jump", m) in by]
    for m in fo:  # B-T4
        rs = sorted(by[("jump", m)], key=lambda r: r["dt"])
        parts, ok = [], True
        for r in rs:
            ap = apexes(r)
            sub = float((r["amin"] < 1).mean()) if len(r["amin"]) else 0.0
            good = r["done"] and sub <= 0.01 and r["tilt"].max() <= 2.0 and len(ap) and np.ptp(ap) <= 0.04
            ok &= bool(good)
            parts.append(f"{r['dt'] * 1e3:g} ms: finite {r['done']}, sub-stepped {sub * 100:.1f} %, max tilt "
                         f"{r['tilt'].max():.2f} deg, apex spread {np.ptp(ap) * 100 if len(ap) else np.nan:.1f} cm")  # fmt: skip
        line(f"B-T4 ({m} jump)", ok, "; ".join(parts))
    for mot in ("jump", "walk"):  # B-T5
        rs = sorted(by.get((mot, "ne_mdp"), []), key=lambda r: r["dt"])
        if not rs:
            continue
        bad = [r for r in rs if not r["done"]]
        stable = [r["dt"] * 1e3 for r in rs if r["done"]]
        thr = f"stable at {stable} ms, diverged at {[(r['dt'] * 1e3, r['why']) for r in bad]}"
        cmp = ""
        if mot == "jump" and ("jump", "nmdp") in by:
            ne5 = [r for r in rs if abs(r["dt"] - min(x["dt"] for x in rs)) < 1e-12][0]
            nm = max(by[("jump", "nmdp")], key=lambda r: r["dt"])
            cmp = (f"; ne_mdp max tilt at {ne5['dt'] * 1e3:g} ms {ne5['tilt'].max():.3f} deg vs nmdp at "
                   f"{nm['dt'] * 1e3:g} ms {nm['tilt'].max():.3f} deg")  # fmt: skip
            ok = bool(bad) and ne5["tilt"].max() >= nm["tilt"].max()
        else:
            ok = bool(bad)
        line(f"B-T5 (ne_mdp {mot})", ok, thr + cmp)
    # B-T6
    tab = {}
    for (mot, m), rs in by.items():
        key = "z" if mot == "jump" else "x"
        tab[(mot, m)] = table_std(rs, key, T)
    if ("jump", "nmdp") in tab:
        s_nm = tab[("jump", "nmdp")][0]
        s_pb = tab.get(("jump", "pbd_nmdp"), (np.nan,))[0]
        s_ne, dts_ne = tab.get(("jump", "ne_mdp"), (np.nan, []))
        ok = s_nm <= 0.05 and (np.isnan(s_pb) or s_pb <= 0.05)
        ratio = s_ne / s_nm if s_nm > 0 else np.nan
        txt = f"jump height std: nmdp {s_nm:.4f} m, pbd_nmdp {s_pb:.4f}, ne_mdp {s_ne:.4f} over {len(dts_ne)} stable dts (ratio {ratio:.1f}x)"
        if len(dts_ne) >= 3:
            ok = ok and ratio >= 3
        else:
            txt += " (ne_mdp ratio needs >= 3 stable dts: not judged)"
        line("B-T6 (jump)", ok, txt)
    if ("walk", "nmdp") in tab and ("walk", "ne_mdp") in tab:
        a, b = tab[("walk", "nmdp")][0], tab[("walk", "ne_mdp")][0]
        line(
            "B-T6 (walk)",
            (a <= 0.5 * b) if np.isfinite(b) else None,
            f"walk distance std: nmdp {a:.4f} m, ne_mdp {b:.4f} m",
        )
    for mot in ("jump", "walk"):  # like for like: ne_mdp with nmdp's SPD, over the dts both completed
        be = {round(r["dt"], 6): r for r in by.get((mot, "ne_mdp_be"), []) if r["done"]}
        for m in ("nmdp", "pbd_nmdp"):
            fo = {round(r["dt"], 6): r for r in by.get((mot, m), []) if r["done"]}
            common = sorted(set(be) & set(fo))
            if len(common) < 2:
                continue
            key = "z" if mot == "jump" else "x"
            a = table_std([fo[d] for d in common], key, T)[0]
            b = table_std([be[d] for d in common], key, T)[0]
            line(f"B-T6 ({mot}, like for like)", None,
                 f"{m} {a:.4f} m vs ne_mdp_be (SPD at the new state) {b:.4f} m over the same "
                 f"{','.join(f'{d * 1e3:g}' for d in common)} ms (ratio {b / a if a > 0 else np.nan:.2f}x)")  # fmt: skip
    # the bars for pbd_nmdp too (the Robosimian's lines above are kept as they were), and nmdp_step's
    for m in ("nmdp_step",) if robot == "robosimian" else ("pbd_nmdp", "nmdp_step"):
        for mot, bar in (("jump", "<= 0.05 m and ne_mdp's >= 3x"), ("walk", "<= 1/2 ne_mdp's")):
            if (mot, m) not in tab or (mot, "ne_mdp") not in tab:
                continue
            (a, _), (b, dts_ne) = tab[(mot, m)], tab[(mot, "ne_mdp")]
            ok = None
            if np.isfinite(a) and np.isfinite(b) and (mot == "walk" or len(dts_ne) >= 3):
                ok = bool(a <= 0.5 * b) if mot == "walk" else bool(a <= 0.05 and b >= 3 * a)
            what = "jump height" if mot == "jump" else "walk distance"
            line(f"B-T6 ({mot}, {m})", ok, f"{what} std: {m} {a:.4f} m, ne_mdp {b:.4f} m over "
                 f"{len(dts_ne)} stable dts (ratio {b / a if a > 0 else np.nan:.1f}x; bar: {m} {bar})")  # fmt: skip
    # B-T7
    for mot in ("jump", "walk"):
        for fo_m, zo_m in (("nmdp", "nmdp_zo"), ("pbd_nmdp", "pbd_nmdp_zo")):
            if (mot, zo_m) not in by or (mot, fo_m) not in by:
                continue
            zo50 = [r for r in by[(mot, zo_m)] if abs(r["dt"] - 0.05) < 1e-9]
            fo50 = [r for r in by[(mot, fo_m)] if abs(r["dt"] - 0.05) < 1e-9]
            ratios = []
            for dt in sorted({r["dt"] for r in by[(mot, zo_m)]}):
                a = [r for r in by[(mot, zo_m)] if r["dt"] == dt]
                b = [r for r in by[(mot, fo_m)] if r["dt"] == dt]
                if a and b and len(a[0]["its"]) and len(b[0]["its"]):
                    ratios.append((dt * 1e3, a[0]["its"].mean() / max(b[0]["its"].mean(), 1e-9)))
            txt = "ZO/FO mean outer iterations " + ", ".join(f"{d:g} ms {x:.2f}x" for d, x in ratios)
            ok = None
            if zo50 and fo50:
                amin = min(zo50[0]["amin"].min() if len(zo50[0]["amin"]) else 1, 1.0) * 50
                ok = zo50[0]["done"] and fo50[0]["done"] and amin >= 12.5
                txt += f"; at 50 ms: {zo_m} completes {zo50[0]['done']}, {fo_m} {fo50[0]['done']}, min alpha dt {amin:g} ms"
            if ratios and min(x for _, x in ratios) < 2:
                txt += " [flag: ratio < 2]"
            line(f"B-T7 ({zo_m} {mot})", ok, txt)
    # B-T8
    for mot in ("jump", "walk"):
        for m in ("nmdp", "pbd_nmdp", "nmdp_step"):
            parts, ok, judged = [], True, False
            for r in by.get((mot, m), []):
                ne = [x for x in by.get((mot, "ne_mdp"), []) if x["dt"] == r["dt"]]
                if ne and not ne[0]["done"]:  # a diverging baseline's steps are no cost to compare against
                    parts.append(f"{r['dt'] * 1e3:g} ms n/a (ne_mdp diverged)")
                elif ne and len(ne[0]["wall"]) and len(r["wall"]):
                    f = np.median(r["wall"]) / np.median(ne[0]["wall"])
                    ok &= f <= 5
                    judged = True
                    parts.append(f"{r['dt'] * 1e3:g} ms {f:.1f}x")
            if judged:
                line(f"B-T8 ({m} {mot}, median wall/step vs ne_mdp where it is stable)", ok, ", ".join(parts))
    return out, tab


def table_one(tab, robot="robosimian"):
    meths = [
        m
        for m in ("ne_mdp", "ne_mdp_be", "pbd_nmdp", "pbd_nmdp_zo", "nmdp", "nmdp_zo", "nmdp_step")
        if any(k[1] == m for k in tab)
    ]
    lines = ["| Quantity (mean over t of the std across dt) | " + " | ".join(meths) + " |",
             "|---|" + "---:|" * len(meths)]  # fmt: skip
    for mot, lab in (("walk", f"{LABEL[robot]} walk dist [m]"), ("jump", f"{LABEL[robot]} jump height [m]")):
        cells = []
        for m in meths:
            v, dts = tab.get((mot, m), (np.nan, []))
            cells.append(f"{v:.4f} ({','.join(f'{d * 1e3:g}' for d in dts)} ms)" if np.isfinite(v) else "-")
        lines.append(f"| {lab} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


# ---------------------------------------------------------------- figures
def plots(runs, q0, out_dir, tag="", robot="robosimian"):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    meths = sorted({r["method"] for r in runs}, key=lambda m: ORDER.index(m) if m in ORDER else 9)
    figs = (("jump", "tilt", "torso tilt [deg]", "Fig. 3: torso tilt, symmetric jump"),
            ("jump", "z", "torso height - stance [m]", "Fig. 4: torso height, jump"),
            ("walk", "x", "forward distance [m]", "Fig. 5: walking distance"))  # fmt: skip
    written = []
    for mot, key, ylab, title in figs:
        rs = [r for r in runs if r["motion"] == mot]
        if not rs:
            continue
        fig, axs = plt.subplots(1, len(meths), figsize=(3.2 * len(meths), 2.6), sharey=True, squeeze=False)
        for ax, m in zip(axs[0], meths):
            for r in sorted((r for r in rs if r["method"] == m), key=lambda r: r["dt"]):
                y = r[key] - (r[key][0] if key == "x" else q0[2] if key == "z" else 0.0)
                ax.plot(r["t"], y, lw=0.8, label=f"{r['dt'] * 1e3:g} ms" + ("" if r["done"] else " x"))
            ax.set_title(m, fontsize=9)
            ax.set_xlabel("t [s]", fontsize=8)
            ax.tick_params(labelsize=7)
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize=6)
        axs[0][0].set_ylabel(ylab, fontsize=8)
        if key == "tilt":
            axs[0][0].set_ylim(0, min(TILT_MAX, max(2.0, max(float(r["tilt"].max()) for r in rs if r["done"]))))
        elif key == "z":
            axs[0][0].set_ylim(-0.3, 0.3)
        else:
            axs[0][0].set_ylim(-0.5, 4.0)
        who = "" if robot == "robosimian" else f" -- {LABEL[robot]}"
        fig.suptitle(title + who + " (x: diverged)", fontsize=9)
        fig.tight_layout()
        p = out_dir / f"nmdp_{robot}_{'tilt' if key == 'tilt' else 'height' if key == 'z' else 'walk'}{tag}.png"
        fig.savefig(p, dpi=72)
        plt.close(fig)
        written.append(p)
    return written


# ---------------------------------------------------------------- main
def save(path, runs, q0):
    d = {"q0": q0}
    for i, r in enumerate(runs):
        for k, v in r.items():
            d[f"{i}:{k}"] = np.asarray(v)
    np.savez_compressed(path, **d)


def load(path):
    z = np.load(path, allow_pickle=False)
    runs = {}
    for k in z.files:
        if k == "q0":
            continue
        i, key = k.split(":", 1)
        v = z[k]
        runs.setdefault(int(i), {})[key] = v.item() if v.ndim == 0 else v
    return [runs[i] for i in sorted(runs)], z["q0"]


def runs_robot(runs, default="robosimian") -> str:
    """The robot of saved runs (those written before --robot existed are the Robosimian's); one robot only."""
    robots = {str(r.get("robot", "robosimian")) for r in runs} or {default}
    if len(robots) > 1:
        sys.exit(f"runs of several robots in one report: {sorted(robots)}")
    return robots.pop()


def report(runs, q0, T, tag="", robot="robosimian"):
    print(f"\n{HEAD}")
    for r in runs:
        print(row(r, q0))
    v, tab = verdicts(runs, q0, T, robot)
    print()
    for x in v:
        print(x)
    print("\nTable I (ours" + ("" if robot == "robosimian" else f", {LABEL[robot]}") + "):\n" + table_one(tab, robot))
    for p in plots(runs, q0, OUT, tag, robot):
        print(f"wrote {p.relative_to(ROOT)}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--robot", choices=ROBOTS, default="robosimian",
                    help="robosimian (../shared's URDF) or spider (pbsim_models.spider: our substitute for the paper's Spider)")  # fmt: skip
    ap.add_argument("--methods", default="nmdp,nmdp_zo,pbd_nmdp,pbd_nmdp_zo,ne_mdp",
                    help="comma list; those not registered in this tree are skipped; ne_mdp_be: ne_mdp with spd=backward")  # fmt: skip
    ap.add_argument("--dts", default="5,10,20,25,50", help="time steps [ms]")
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--motions", default="jump,walk")
    ap.add_argument("--as-is", action="store_true", help="the URDF as it is (limbs 1, 2 at yaw 3.1515926)")
    ap.add_argument("--npz", help="write the series here (and append to it: runs already in it are kept)")
    ap.add_argument("--plot-only", metavar="NPZ[,NPZ...]", help="report and plot saved --npz files, simulate nothing")
    ap.add_argument("--tag", default="", help="suffix of the PNG names")
    ap.add_argument("--kd-per-kg", type=float, default=KD_PER_KG, help="SPD kd / total mass (kp is 30 M)")
    a = ap.parse_args(argv)
    if a.plot_only:
        runs = []
        for f in a.plot_only.split(","):
            rs, q0 = load(f)
            runs += rs
        report(runs, q0, a.seconds, a.tag, runs_robot(runs, a.robot))
        return
    if a.robot == "spider":
        model, scene, q0 = build(robot="spider")
        print(f"{LABEL['spider']}: pbsim_models.spider(), nv {model.nv}, M {model.total_mass:.2f} kg, "
              f"{len(scene.contact_points().body)} contact points (4 feet, 4 knees, 8 torso corners), plane mu {MU:g}, "
              f"stance torso z {q0[2]:.4f} m; kp {KP_PER_KG:g} M, kd {a.kd_per_kg:g} M")  # fmt: skip
    else:
        if not URDF.is_file():
            sys.exit(f"Robosimian not found at {URDF} (set PBSIM_SHARED)")
        model, scene, q0 = build(a.as_is)
        print(f"Robosimian {URDF.name}{' (as is)' if a.as_is else ' (symmetrized)'}: nv {model.nv}, M {model.total_mass:.2f} kg, "
              f"{len(scene.contact_points().body)} foot points, stance torso z {q0[2]:.4f} m; kp {KP_PER_KG:g} M, kd {a.kd_per_kg:g} M")  # fmt: skip
    reg = [*available(), *VARIANTS]
    meths = [m for m in a.methods.split(",") if m]
    skipped = [m for m in meths if m not in reg]
    if skipped:
        print(f"not registered in this tree, skipped: {skipped}")
    runs = load(a.npz)[0] if a.npz and Path(a.npz).is_file() else []
    if runs and runs_robot(runs) != a.robot:
        sys.exit(f"{a.npz} holds runs of the {runs_robot(runs)}, not the {a.robot}: use another --npz")
    have = {(r["motion"], r["method"], round(float(r["dt"]) * 1e3, 6)) for r in runs}
    for mot in a.motions.split(","):
        for m in [m for m in meths if m in reg]:
            for dtm in [float(x) for x in a.dts.split(",")]:
                if (mot, m, round(dtm, 6)) in have:
                    continue
                t0 = time.perf_counter()
                r = simulate(m, model, scene, q0, mot, dtm * 1e-3, a.seconds, a.kd_per_kg)
                runs.append(r)
                print(row(r, q0), f"({time.perf_counter() - t0:.0f} s)", flush=True)
                if a.npz:
                    save(a.npz, runs, q0)
    report(runs, q0, a.seconds, a.tag, a.robot)


if __name__ == "__main__":
    main()
