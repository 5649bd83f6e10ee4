"""Compare the CUDA kernels (twins of the CPU kernels, run by numba's simulator or on a GPU) with
the CPU kernels on tiny batches, in two halves:

- :func:`cpu_reference` (no simulator needed): draws the inputs and runs the compiled CPU
  kernels on them; test_cuda.py calls it inside the pytest process, so the CPU kernels are
  compiled (or loaded from the numba cache) once for the whole test session, not again in a
  subprocess under a timeout;
- :func:`device_check`: runs the CUDA path on the same inputs and returns
  ``{check_name: relative_error}`` against the stored CPU results.  It must run in a process
  where ``NUMBA_ENABLE_CUDASIM=1`` was set before numba.cuda was imported (or on a GPU), hence
  ``python cudasim_check.py REF.npz`` prints one line ``RESULT {json}``.

``python cudasim_check.py [HUMANOID.urdf]`` (no .npz) does both halves in one process.
"""

import json
import os
import sys
import time

import numpy as np

import pbsim
import pbsim_models


def rel(a, b):
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(np.abs(a - b).max() / max(1.0, np.abs(b).max()))


def _callees(twin, seen=None):
    """(python function, global name) for every name the twin tree's code refers to."""
    seen = set() if seen is None else seen
    f = twin.py_func
    if id(f) in seen:
        return []
    seen.add(id(f))
    res = []
    for n in f.__code__.co_names:
        res.append((f, n))
        g = f.__globals__.get(n)
        if hasattr(g, "py_func") and hasattr(g, "fn"):
            res += _callees(g, seen)
    return res


def models(humanoid=""):
    ms = {
        "chain3": pbsim_models.chain(3),
        "ballchain2": pbsim_models.chain(2, joint="spherical"),
        "swimmer": pbsim_models.swimmer(),
    }
    if humanoid and os.path.isfile(humanoid):  # DeepMimic humanoid, when pybullet_data is there
        ms["humanoid"] = pbsim.load(humanoid, floating_base=True)
    return ms


# Inputs: every random array is drawn once by cpu_reference and stored under "in/..."; the
# controls are rebuilt from those arrays on both sides by these helpers.
INTEG_MODELS = ("chain3", "swimmer")
INTEGS = ("euler", "rk4")
CTRLS = ("tau", "spd")
LAYOUTS = ("aos", "soa")


def _ctrl(inp, key):
    if key.endswith("/tau"):
        return pbsim.Control(tau=inp[f"in/{key}"])
    return pbsim.Control(
        mode="spd", kp=float(inp[f"in/{key}/kp"]), kd=float(inp[f"in/{key}/kd"]), q_ref=inp[f"in/{key}/q_ref"]
    )


def _nan_ctrl():
    return pbsim.Control(mode="pd", kp=np.array([[1e300] * 3, [0.0] * 3]), kd=0.0, q_ref=np.ones(3))


def _contact_q0(m):
    q0 = m.neutral()
    q0[2] = 0.02  # points ~1 cm deep at the start: contact forces act from step 1
    return q0


def _pbad_kw(inp):
    return dict(
        dt=0.05,
        steps=2,
        q0=inp["in/pbad/q"][0],
        batch=2,
        control=_ctrl(inp, "pbad/ctrl"),
        max_iterations=20,
        hessian="gn",
    )


def cpu_reference(humanoid="") -> dict:
    """Inputs ("in/...") and the CPU kernels' outputs ("cpu/...", "val/...") as arrays."""
    from pbsim.integrators import State, make

    rng = np.random.default_rng(7)
    ms = models(humanoid)
    out = {"in/humanoid": np.array(humanoid if "humanoid" in ms else "")}
    # dynamics kernels: FK, RNEA, CRBA, ABA on revolute, ball and free joints, B = 2
    B = 2
    for name, m in ms.items():
        q = np.stack([m.random_configuration(rng) for _ in range(B)])
        v = rng.standard_normal((B, m.nv))
        a = rng.standard_normal((B, m.nv))
        out.update({f"in/dyn/{name}/q": q, f"in/dyn/{name}/v": v, f"in/dyn/{name}/a": a})
        T = pbsim.forward_kinematics(m, q)  # (B, nb, 4, 4)
        out[f"cpu/fk/{name}/R"], out[f"cpu/fk/{name}/p"] = T[:, :, :3, :3], T[:, :, :3, 3]
        out[f"cpu/rnea/{name}"] = pbsim.rnea(m, q, v, a)
        out[f"cpu/crba/{name}"] = pbsim.crba(m, q)
        out[f"cpu/aba/{name}"] = pbsim.aba(m, q, v, a)
    # integrators: euler + rk4, torque and SPD control, 3 steps, B = 3
    B = 3
    for name in INTEG_MODELS:
        m = ms[name]
        q = np.stack([m.random_configuration(rng) for _ in range(B)])
        v = rng.standard_normal((B, m.nv))
        out.update(
            {
                f"in/int/{name}/q": q,
                f"in/int/{name}/v": v,
                f"in/int/{name}/tau": rng.standard_normal((B, m.nv)),
                f"in/int/{name}/spd/kp": np.array(40.0),
                f"in/int/{name}/spd/kd": np.array(4.0),
                f"in/int/{name}/spd/q_ref": m.random_configuration(rng),
            }
        )
        for integ in INTEGS:
            for cn in CTRLS:
                ctrl = _ctrl(out, f"int/{name}/{cn}")
                st = State.make(m, q, v)
                I = make(integ, m)
                for _ in range(3):
                    st, d = I.step(st, ctrl, 0.01)
                k = f"cpu/{integ}/{name}/{cn}"
                out[f"{k}/q"], out[f"{k}/v"], out[f"{k}/e"] = st.q, st.v, d.energy
    # per-launch scheduling: euler, swimmer, SPD, 2 steps of 0.02
    m = ms["swimmer"]
    q = np.stack([m.random_configuration(rng) for _ in range(B)])
    v = rng.standard_normal((B, m.nv))
    out.update({"in/sched/q": q, "in/sched/v": v})
    st = State.make(m, q, v)
    I = make("euler", m)
    ctrl = pbsim.Control(mode="spd", kp=40.0, kd=4.0, q_ref=m.neutral())
    for _ in range(2):
        st, _d = I.step(st, ctrl, 0.02)
    out["cpu/sched/q"], out["cpu/sched/v"] = st.q, st.v
    # rollout(device="cuda") against the CPU rollout, recording every 2nd of 4 steps
    q0 = m.random_configuration(rng)
    out["in/rollout/q0"] = q0
    ctrl = pbsim.Control(mode="spd", kp=20.0, kd=2.0, q_ref=m.neutral())
    tc = pbsim.rollout(m, "euler", dt=0.01, steps=4, q0=q0, batch=2, control=ctrl, record_every=2)
    out.update({"cpu/rollout/q": tc.q, "cpu/rollout/v": tc.v, "cpu/rollout/e": tc.energy, "cpu/rollout/t": tc.t})
    # divergence: trajectory 0 blows up (kp = 1e300), trajectory 1 does not
    m = ms["chain3"]
    with np.errstate(all="ignore"):
        tc = pbsim.rollout(m, "euler", dt=0.01, steps=4, q0=m.neutral(), batch=2, control=_nan_ctrl(), on_nan="stop")
    out["cpu/nan/q"], out["cpu/nan/diverged"] = tc.q, np.asarray(tc.diverged)
    # plane contact: swimmer dropped onto a plane, euler + SPD, 3 steps, B = 2
    from pbsim.contact import make_scene

    m = ms["swimmer"]
    ctrl = pbsim.Control(mode="spd", kp=20.0, kd=2.0, q_ref=m.neutral())
    kw = dict(dt=0.01, steps=3, q0=_contact_q0(m), batch=2, control=ctrl)
    tc = pbsim.rollout(m, "euler", scene=make_scene(m, ground="plane"), **kw)
    tf = pbsim.rollout(m, "euler", **kw)  # the same without contact
    out.update({"cpu/contact/q": tc.q, "cpu/contact/v": tc.v, "cpu/contact/e": tc.energy})
    out["val/contact/plane/effect"] = np.array(rel(tc.v, tf.v))  # must be large: contact really acts
    # PBAD order 2 + LM, chain3, SPD, dt 0.05, 2 steps, B = 2
    m = ms["chain3"]
    B = 2
    q = np.stack([m.random_configuration(rng) for _ in range(B)])
    v = rng.standard_normal((B, m.nv))
    out.update(
        {
            "in/pbad/q": q,
            "in/pbad/v": v,
            "in/pbad/ctrl/kp": np.array(40.0),
            "in/pbad/ctrl/kd": np.array(4.0),
            "in/pbad/ctrl/q_ref": m.random_configuration(rng),
        }
    )
    st = State.make(m, q, v)
    I = make("pbad", m)
    ctrl = _ctrl(out, "pbad/ctrl")
    for _ in range(2):
        st, d = I.step(st, ctrl, 0.05)
    out.update(
        {
            "cpu/pbad/q": st.q,
            "cpu/pbad/v": st.v,
            "cpu/pbad/e": d.energy,
            "cpu/pbad/iterations": np.asarray(d.iterations),
            "cpu/pbad/converged": np.asarray(d.converged),
        }
    )
    out["val/pbad/cpu_iterations"] = np.array(float(d.iterations.min()))
    # through pbsim.rollout with integrator options
    tc = pbsim.rollout(m, "pbad", **_pbad_kw(out))
    out.update({"cpu/pbad_rollout/q": tc.q, "cpu/pbad_rollout/v": tc.v, "cpu/pbad_rollout/e": tc.energy})
    return out


def device_check(ref) -> dict:
    """Run the CUDA path on ``ref``'s inputs: ``{check: relative error vs the CPU outputs}``."""
    from pbsim.backends import cuda as pc
    from pbsim.backends import cuda_kernels as pc_kern
    from pbsim.backends.cpu import noop_step
    from pbsim.integrators.explicit.step import euler_step, rk_step
    from pbsim.jit import cuda_twin, is_kernel
    from pbsim.rollout_gpu import rollout_cuda

    assert pc.available(), pc.device_status()
    out = {}
    pc.kernels()
    # every kernel a twin calls must itself be a twin (a CPU dispatcher left in would mean the
    # simulator ran CPU code, or a real GPU build fails)
    from pbsim.integrators.pbad.step import pbad_begin, pbad_end, pbad_iterate, pbad_step

    twins = (
        pc_kern._fk,
        pc_kern._rnea,
        pc_kern._crba,
        pc_kern._aba,
        pc_kern._energy,
        cuda_twin(euler_step),
        cuda_twin(rk_step),
        cuda_twin(pbad_step),
        cuda_twin(pbad_begin),
        cuda_twin(pbad_iterate),
        cuda_twin(pbad_end),
    )
    left = (
        [(f.__name__, n) for t in twins for f, n in _callees(t) if is_kernel(f.__globals__.get(n))]
        if pc.simulated()
        else []
    )
    out["twins/cpu_callees_left"] = float(len(left))
    ms = models(str(ref["in/humanoid"]))
    for name, m in ms.items():
        q, v, a = (ref[f"in/dyn/{name}/{x}"] for x in "qva")
        layout = "soa" if name == "swimmer" else "aos"
        Rw, pw = pc.fk(m, q, layout=layout)
        out[f"fk/{name}"] = max(rel(Rw, ref[f"cpu/fk/{name}/R"]), rel(pw, ref[f"cpu/fk/{name}/p"]))
        out[f"rnea/{name}"] = rel(pc.rnea(m, q, v, a, layout=layout), ref[f"cpu/rnea/{name}"])
        out[f"crba/{name}"] = rel(pc.crba(m, q, layout=layout), ref[f"cpu/crba/{name}"])
        out[f"aba/{name}"] = rel(pc.aba(m, q, v, a, layout=layout), ref[f"cpu/aba/{name}"])
    # integrators: euler + rk4, torque and SPD control, AoS and SoA, 3 steps, B = 3
    B = 3
    for name in INTEG_MODELS:
        m = ms[name]
        q, v = ref[f"in/int/{name}/q"], ref[f"in/int/{name}/v"]
        for integ in INTEGS:
            for cn in CTRLS:
                k = f"cpu/{integ}/{name}/{cn}"
                for layout in LAYOUTS:
                    g = pc.CudaBatch(m, integ, batch=B, layout=layout)
                    g.set_state(q, v)
                    g.set_control(_ctrl(ref, f"int/{name}/{cn}"))
                    g.advance(3, 0.01)
                    qg, vg, eg = g.record()
                    out[f"{integ}/{name}/{cn}/{layout}"] = max(
                        rel(qg, ref[f"{k}/q"]), rel(vg, ref[f"{k}/v"]), rel(eg, ref[f"{k}/e"])
                    )
    # per-launch scheduling (one phase per launch) reproduces the in-kernel step and the CPU
    # a method added through the contract alone (a class with a StepSpec): the drivers run it unedited
    from pbsim.integrators import StepSpec, register
    from pbsim.integrators.explicit import SemiImplicitEuler

    @register("euler_split", doc="test: semi-implicit Euler with a per-launch schedule")
    class EulerSplit(SemiImplicitEuler):
        name = "euler_split"
        STEP = StepSpec(euler_step, per_launch=(euler_step, noop_step, noop_step, 2))

    m = ms["swimmer"]
    ctrl = pbsim.Control(mode="spd", kp=40.0, kd=4.0, q_ref=m.neutral())
    for integ, sched in (("euler", "kernel"), ("euler_split", "launch")):
        g = pc.CudaBatch(m, integ, batch=B, layout="soa", schedule=sched)
        g.set_state(ref["in/sched/q"], ref["in/sched/v"])
        g.set_control(ctrl)
        g.advance(2, 0.02)
        qg, vg = g.state()
        out[f"schedule/{sched}"] = max(rel(qg, ref["cpu/sched/q"]), rel(vg, ref["cpu/sched/v"]))
    # rollout(device="cuda") against the CPU rollout
    ctrl = pbsim.Control(mode="spd", kp=20.0, kd=2.0, q_ref=m.neutral())
    tg = rollout_cuda(m, "euler", dt=0.01, steps=4, q0=ref["in/rollout/q0"], batch=2, control=ctrl, record_every=2)
    out["rollout/swimmer"] = max(
        rel(tg.q, ref["cpu/rollout/q"]),
        rel(tg.v, ref["cpu/rollout/v"]),
        rel(tg.energy, ref["cpu/rollout/e"]),
        rel(tg.t, ref["cpu/rollout/t"]),
    )
    out["rollout/shape"] = float(tg.q.shape != ref["cpu/rollout/q"].shape)
    # divergence
    m = ms["chain3"]
    c = _nan_ctrl()
    with np.errstate(all="ignore"):
        tg = rollout_cuda(m, "euler", dt=0.01, steps=4, q0=m.neutral(), batch=2, control=c, on_nan="stop")
        out["nan/stop"] = float(
            not (
                list(tg.diverged) == list(ref["cpu/nan/diverged"]) == [True, False]
                and np.array_equal(tg.q, ref["cpu/nan/q"])
            )
        )
        try:
            rollout_cuda(m, "euler", dt=0.01, steps=4, q0=m.neutral(), batch=2, control=c)
            out["nan/raise"] = 1.0
        except pbsim.SimulationError as e:
            out["nan/raise"] = float("trajectory 0" not in str(e))
    # plane contact (pbsim.contact penalty forces) on the device
    from pbsim.contact import make_scene

    m = ms["swimmer"]
    ctrl = pbsim.Control(mode="spd", kp=20.0, kd=2.0, q_ref=m.neutral())
    kw = dict(dt=0.01, steps=3, q0=_contact_q0(m), batch=2, control=ctrl)
    tg = pbsim.rollout(m, "euler", scene=make_scene(m, ground="plane"), device="cuda", layout="soa", **kw)
    out["contact/plane/swimmer"] = max(
        rel(tg.q, ref["cpu/contact/q"]), rel(tg.v, ref["cpu/contact/v"]), rel(tg.energy, ref["cpu/contact/e"])
    )
    out["contact/plane/effect"] = float(ref["val/contact/plane/effect"])
    # PBAD order 2 + LM: in-kernel LM loop and one LM iteration per launch, vs the CPU pbad
    m = ms["chain3"]
    for sched, layout in (("kernel", "aos"), ("launch", "soa")):
        g = pc.CudaBatch(m, "pbad", batch=2, layout=layout, schedule=sched)
        g.set_state(ref["in/pbad/q"], ref["in/pbad/v"])
        g.set_control(_ctrl(ref, "pbad/ctrl"))
        g.advance(2, 0.05)
        qg, vg, eg = g.record()
        info = g.solver_info()
        out[f"pbad/{sched}"] = max(rel(qg, ref["cpu/pbad/q"]), rel(vg, ref["cpu/pbad/v"]), rel(eg, ref["cpu/pbad/e"]))
        out[f"pbad/{sched}/iterations"] = float(
            np.any(info[:, 0] != ref["cpu/pbad/iterations"]) or np.any((info[:, 2] > 0.5) != ref["cpu/pbad/converged"])
        )
    out["pbad/cpu_iterations"] = float(ref["val/pbad/cpu_iterations"])
    # through pbsim.rollout(device="cuda") with integrator options and the per-launch schedule
    tg = pbsim.rollout(m, "pbad", device="cuda", schedule="launch", **_pbad_kw(ref))
    out["pbad/rollout"] = max(
        rel(tg.q, ref["cpu/pbad_rollout/q"]),
        rel(tg.v, ref["cpu/pbad_rollout/v"]),
        rel(tg.energy, ref["cpu/pbad_rollout/e"]),
    )
    return out


def main(argv):
    t0 = time.perf_counter()
    if argv and argv[0].endswith(".npz"):
        with np.load(argv[0]) as f:
            ref = dict(f)
    else:
        ref = cpu_reference(argv[0] if argv else "")
        print(f"cpu_reference: {time.perf_counter() - t0:.1f} s", flush=True)
    t1 = time.perf_counter()
    out = device_check(ref)
    print(f"device_check: {time.perf_counter() - t1:.1f} s", flush=True)
    print("RESULT " + json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1:])
