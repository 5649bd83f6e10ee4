"""Run under NUMBA_ENABLE_CUDASIM=1 (a subprocess of test_cuda.py): compare the CUDA kernels
(twins of the CPU kernels, run by numba's simulator) with the CPU kernels on tiny batches and
print one JSON line ``{check_name: relative_error}``."""
import json
import os
import sys

import numpy as np

import pbsim
import pbsim_models
from pbsim.backends import cuda as pc
from pbsim.backends.cpu import euler_step, noop_step, rk_step
from pbsim.backends.kernel import cuda_twin, is_kernel
from pbsim.integrators import State, make
from pbsim.rollout_gpu import rollout_cuda


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


def main():
    assert pc.available(), pc.device_status()
    rng = np.random.default_rng(7)
    out = {}
    pc.kernels()
    # every kernel a twin calls must itself be a twin (a CPU dispatcher left in would mean the
    # simulator ran CPU code, or a real GPU build fails)
    from pbsim.backends.pbad_gpu import pbad_begin, pbad_end, pbad_iterate, pbad_step

    twins = (pc._fk, pc._rnea, pc._crba, pc._aba, pc._energy, cuda_twin(euler_step), cuda_twin(rk_step),
             cuda_twin(pbad_step), cuda_twin(pbad_begin), cuda_twin(pbad_iterate), cuda_twin(pbad_end))
    left = [(f.__name__, n) for t in twins
            for f, n in _callees(t) if is_kernel(f.__globals__.get(n))] if pc.simulated() else []
    out["twins/cpu_callees_left"] = float(len(left))
    models = {"chain3": pbsim_models.chain(3), "ballchain2": pbsim_models.chain(2, joint="spherical"),
              "swimmer": pbsim_models.swimmer()}
    if len(sys.argv) > 1 and os.path.isfile(sys.argv[1]):  # DeepMimic humanoid, when pybullet_data is there
        models["humanoid"] = pbsim.load(sys.argv[1], floating_base=True)
    B = 2
    for name, m in models.items():
        q = np.stack([m.random_configuration(rng) for _ in range(B)])
        v = rng.standard_normal((B, m.nv))
        a = rng.standard_normal((B, m.nv))
        layout = "soa" if name == "swimmer" else "aos"
        Rw, pw = pc.fk(m, q, layout=layout)
        T = pbsim.forward_kinematics(m, q)  # (B, nb, 4, 4)
        out[f"fk/{name}"] = max(rel(Rw, T[:, :, :3, :3]), rel(pw, T[:, :, :3, 3]))
        out[f"rnea/{name}"] = rel(pc.rnea(m, q, v, a, layout=layout), pbsim.rnea(m, q, v, a))
        out[f"crba/{name}"] = rel(pc.crba(m, q, layout=layout), pbsim.crba(m, q))
        out[f"aba/{name}"] = rel(pc.aba(m, q, v, a, layout=layout), pbsim.aba(m, q, v, a))
    # integrators: euler + rk4, torque and SPD control, 3 steps, B = 3
    B = 3
    for name in ("chain3", "swimmer"):
        m = models[name]
        q = np.stack([m.random_configuration(rng) for _ in range(B)])
        v = rng.standard_normal((B, m.nv))
        ctrls = {"tau": pbsim.Control(tau=rng.standard_normal((B, m.nv))),
                 "spd": pbsim.Control(mode="spd", kp=40.0, kd=4.0, q_ref=m.random_configuration(rng))}
        for integ in ("euler", "rk4"):
            for cn, ctrl in ctrls.items():
                for layout in ("aos", "soa"):
                    g = pc.CudaBatch(m, integ, batch=B, layout=layout)
                    g.set_state(q, v)
                    g.set_control(ctrl)
                    g.advance(3, 0.01)
                    qg, vg, eg = g.record()
                    st = State.make(m, q, v)
                    I = make(integ, m)
                    for _ in range(3):
                        st, d = I.step(st, ctrl, 0.01)
                    out[f"{integ}/{name}/{cn}/{layout}"] = max(rel(qg, st.q), rel(vg, st.v), rel(eg, d.energy))
    # per-launch scheduling (one phase per launch) reproduces the in-kernel step
    pc.register_stepper("euler_split", euler_step, per_launch=(euler_step, noop_step, noop_step, 2))
    m = models["swimmer"]
    q = np.stack([m.random_configuration(rng) for _ in range(B)])
    v = rng.standard_normal((B, m.nv))
    ctrl = pbsim.Control(mode="spd", kp=40.0, kd=4.0, q_ref=m.neutral())
    res = {}
    for integ, sched in (("euler", "kernel"), ("euler_split", "launch")):
        g = pc.CudaBatch(m, integ, batch=B, layout="soa", schedule=sched)
        g.set_state(q, v)
        g.set_control(ctrl)
        g.advance(2, 0.02)
        res[sched] = g.state()
    st = State.make(m, q, v)
    I = make("euler", m)
    for _ in range(2):
        st, _d = I.step(st, ctrl, 0.02)
    out["schedule/launch"] = max(rel(res["launch"][0], st.q), rel(res["launch"][1], st.v))
    out["schedule/kernel"] = max(rel(res["kernel"][0], st.q), rel(res["kernel"][1], st.v))
    # rollout(device="cuda") against the CPU rollout, recording every 2nd of 4 steps
    m = models["swimmer"]
    q0 = m.random_configuration(rng)
    ctrl = pbsim.Control(mode="spd", kp=20.0, kd=2.0, q_ref=m.neutral())
    tg = rollout_cuda(m, "euler", dt=0.01, steps=4, q0=q0, batch=2, control=ctrl, record_every=2)
    tc = pbsim.rollout(m, "euler", dt=0.01, steps=4, q0=q0, batch=2, control=ctrl, record_every=2)
    out["rollout/swimmer"] = max(rel(tg.q, tc.q), rel(tg.v, tc.v), rel(tg.energy, tc.energy), rel(tg.t, tc.t))
    out["rollout/shape"] = float(tg.q.shape != tc.q.shape)
    # divergence: trajectory 0 blows up (kp = 1e300), trajectory 1 does not
    m = models["chain3"]
    c = pbsim.Control(mode="pd", kp=np.array([[1e300] * 3, [0.0] * 3]), kd=0.0, q_ref=np.ones(3))
    with np.errstate(all="ignore"):
        tc = pbsim.rollout(m, "euler", dt=0.01, steps=4, q0=m.neutral(), batch=2, control=c, on_nan="stop")
        tg = rollout_cuda(m, "euler", dt=0.01, steps=4, q0=m.neutral(), batch=2, control=c, on_nan="stop")
        out["nan/stop"] = float(not (list(tg.diverged) == list(tc.diverged) == [True, False]
                                     and np.array_equal(tg.q, tc.q)))
        try:
            rollout_cuda(m, "euler", dt=0.01, steps=4, q0=m.neutral(), batch=2, control=c)
            out["nan/raise"] = 1.0
        except pbsim.SimulationError as e:
            out["nan/raise"] = float("trajectory 0" not in str(e))
    # plane contact (pbsim.contact penalty forces) on the device: swimmer dropped onto a plane
    from pbsim.contact import make_scene

    m = models["swimmer"]
    sc = make_scene(m, ground="plane")
    q0 = m.neutral()
    q0[2] = 0.02  # points ~1 cm deep at the start: contact forces act from step 1
    ctrl = pbsim.Control(mode="spd", kp=20.0, kd=2.0, q_ref=m.neutral())
    kw = dict(dt=0.01, steps=3, q0=q0, batch=2, control=ctrl)
    tg = pbsim.rollout(m, "euler", scene=sc, device="cuda", layout="soa", **kw)
    tc = pbsim.rollout(m, "euler", scene=sc, **kw)
    tf = pbsim.rollout(m, "euler", **kw)  # the same without contact
    out["contact/plane/swimmer"] = max(rel(tg.q, tc.q), rel(tg.v, tc.v), rel(tg.energy, tc.energy))
    out["contact/plane/effect"] = rel(tc.v, tf.v)  # must be large: contact really acts
    # PBAD order 2 + LM: in-kernel LM loop and one LM iteration per launch, vs the CPU pbad
    m = models["chain3"]
    B = 2
    q = np.stack([m.random_configuration(rng) for _ in range(B)])
    v = rng.standard_normal((B, m.nv))
    ctrl = pbsim.Control(mode="spd", kp=40.0, kd=4.0, q_ref=m.random_configuration(rng))
    st = State.make(m, q, v)
    I = make("pbad", m)
    for _ in range(2):
        st, d = I.step(st, ctrl, 0.05)
    for sched, layout in (("kernel", "aos"), ("launch", "soa")):
        g = pc.CudaBatch(m, "pbad", batch=B, layout=layout, schedule=sched)
        g.set_state(q, v)
        g.set_control(ctrl)
        g.advance(2, 0.05)
        qg, vg, eg = g.record()
        info = g.solver_info()
        out[f"pbad/{sched}"] = max(rel(qg, st.q), rel(vg, st.v), rel(eg, d.energy))
        out[f"pbad/{sched}/iterations"] = float(np.any(info[:, 0] != d.iterations)
                                                or np.any((info[:, 2] > 0.5) != d.converged))
    out["pbad/cpu_iterations"] = float(d.iterations.min())
    # through pbsim.rollout(device="cuda") with integrator options and the per-launch schedule
    kw = dict(dt=0.05, steps=2, q0=q[0], batch=2, control=ctrl, max_iterations=20, hessian="gn")
    tg = pbsim.rollout(m, "pbad", device="cuda", schedule="launch", **kw)
    tc = pbsim.rollout(m, "pbad", **kw)
    out["pbad/rollout"] = max(rel(tg.q, tc.q), rel(tg.v, tc.v), rel(tg.energy, tc.energy))
    print("RESULT " + json.dumps(out))


if __name__ == "__main__":
    main()
