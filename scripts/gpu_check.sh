#!/usr/bin/env bash
# The real-GPU checks as one prepared run for a lent GPU machine (no network there; about 8 minutes
# plus the machine's start; every stage prints as it goes and has its own timeout, so a cut-off run
# keeps what was done).  What earlier runs measured is opt-in (GPU_CHECK_EXTRA=1), so a run spends
# its minutes on what is still unmeasured (docs/benchmarks/gpu.md).  In order:
#   0. in the background from the start: every CUDA kernel of the later stages and the CPU
#      references of the agreement, each in its own process (16 cores), filling the disk caches;
#      the PGM forms (stage 5) with the longest budget
#   1. process start to the first step from the disk cache, in new processes (euler, pbad, pbfd);
#      GPU_CHECK_COMPILE=1: compile time per stage, cold and cached (bench_compile.py --on-gpu)
#   2. real GPU vs CPU agreement on the humanoid with its floor and contact between bodies: euler
#      (both layouts), pbad, pbfd, 20 steps of 8 trajectories; ne_dry step by step with its LCP info
#      (it left the CPU on the fourth run); then pbfd's 16k drops (issue 30)
#   3. throughput on gymnasium's humanoid (scripts/bench/bench_gpu.py --cases g): euler, pbad, pbfd
#      at B 16k / 64k in both layouts with contact between bodies; threads per block 64/256 for
#      pbad and pbfd (128 is 3a's).
#      GPU_CHECK_EXTRA=1 adds the floor-only rows, pbad fully inlined and euler's tpb sweep
#   4. MJX on the same file (Euler, same dt), fp32 and fp64, if jax and mujoco-mjx are importable
#   5. the PGM forms not yet measured on the device (pbd_nmdp, pbd_nmdp_zo floor; nmdp with contact
#      between bodies): agreement and throughput at B 4k/16k, for those whose compile finished
#   GPU_CHECK_TWINS=1 adds the broad twin check (tests/backends/cudasim_check.py) at the end.
# Carried files (docs/benchmarks/gpu.md, "How to run on a lent GPU"): .whl/*.whl (numpy<2.5, trimesh,
# rtree, mujoco, mujoco-mjx), .carry/humanoid.xml (gymnasium's).  $OUT gets summary.txt, the stage
# tables, bench_g.png and logs.tgz (every log).
#     bash scripts/gpu_check.sh
set -u
OUT=${OUT:-gpu_out}
LOGS=${LOGS:-/tmp/gpu_check_logs}  # every log; packed into $OUT/logs.tgz at the end ($OUT keeps few files)
mkdir -p "$OUT" "$LOGS"
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:$PWD/models:${PYTHONPATH:-}
export PBSIM_CACHE_DIR=${PBSIM_CACHE_DIR:-/tmp/pbsim_gpu_check_cache}
T0=$(date +%s)
say() { echo "[$(( $(date +%s) - T0 )) s] $*" | tee -a "$OUT/summary.txt"; }
nvidia-smi -L 2>&1 | tee "$LOGS/env.txt"
if ls .whl/*.whl > /dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>&1 | tail -3
  export PYTHONPATH=/tmp/site:$PYTHONPATH
fi
python3 -c "import sys, numpy, numba; print(sys.version.split()[0], 'numpy', numpy.__version__, 'numba', numba.__version__)" 2>&1 | tee -a "$LOGS/env.txt"
python3 -c "from pbsim.backends.cuda import available, device_name, toolkit_missing, toolchain_versions
print('device', device_name()); print('toolkit_missing', toolkit_missing()); print(toolchain_versions())" 2>&1 | tee -a "$LOGS/env.txt"
MJCF=.carry/humanoid.xml
[ -f "$MJCF" ] || { say "no $MJCF: the humanoid stages are skipped (carry gymnasium's humanoid.xml)"; MJCF=""; }

say "0. compiling every kernel the later stages use, in the background"
PRE='
import sys, numpy as np, pbsim
from pbsim.contact import default_scene
integ, lay, what = sys.argv[1:4]
m = pbsim.load(sys.argv[4])
sc = default_scene(m, body_contact=False) if what == "floor" else default_scene(m)
if lay == "cpu":  # the CPU references (bench_gpu.py and stage 2 compare with the integrator on the CPU)
    from pbsim.integrators import State, make
    make(integ, m, sc).step(State.make(m, np.tile(m.default_configuration(), (2, 1)), None), pbsim.Control(), 0.01)
else:
    from pbsim.backends.cuda import CudaBatch
    b = CudaBatch(m, integ, sc, batch=256, layout=lay); b.set_state(None); b.advance(1, 0.01); b.synchronize()
print("compiled", integ, lay, what, flush=True)
'
PIDS=()
pre() { timeout "$5" env ${4:-} python3 -c "$PRE" "$1" "$2" "$3" "$MJCF" > "$LOGS/pre_$1_$2_$3${4:+_inl}.log" 2>&1 & PIDS+=($!); }
if [ -n "$MJCF" ]; then
  for I in euler pbad pbfd; do pre $I aos bodies "" 300; pre $I soa bodies "" 300; pre $I cpu bodies "" 300; done
  if [ "${GPU_CHECK_EXTRA:-0}" = 1 ]; then
    for I in euler pbad; do pre $I aos floor "" 300; pre $I soa floor "" 300; done
  fi
  [ "${GPU_CHECK_EXTRA:-0}" = 1 ] && pre pbad aos bodies PBSIM_CUDA_NOINLINE=none 300
  pre ne_dry aos floor PBSIM_CUDA_ALLOW=ne_dry 300; pre ne_dry cpu floor "" 300
  NMDP_PIDS=()
  for IWL in pbd_nmdp:floor:aos pbd_nmdp:floor:cpu pbd_nmdp_zo:floor:aos pbd_nmdp_zo:floor:cpu nmdp:bodies:aos nmdp:bodies:cpu; do
    IFS=: read -r I W L <<< "$IWL"; pre "$I" "$L" "$W" "" 470; NMDP_PIDS+=("${PIDS[-1]}"); unset 'PIDS[-1]'
  done
fi

if [ "${GPU_CHECK_COMPILE:-0}" = 1 ]; then
  say "1. compile per stage, cold and cached (process start to first step)"
  timeout 140 python3 scripts/bench/bench_compile.py --device cuda --on-gpu --integrators euler,pbad --layout soa \
    ${MJCF:+--mjcf $MJCF} --batch 16384 2>&1 | tee "$LOGS/compile_gpu.txt"
  say "compile done"
fi

if [ -n "$MJCF" ]; then
  say "waiting for the background compiles"
  wait "${PIDS[@]}"
  grep -h "compiled\|Error" "$LOGS"/pre_*.log | cut -c1-300 | sort | tee -a "$OUT/summary.txt"

  say "1. a new process to its first step, kernels from the disk cache (B 16,384)"
  for IL in euler:soa pbad:aos pbfd:soa; do
    timeout 60 python3 -c "
import time; t0 = time.perf_counter()
import sys, pbsim
from pbsim.backends.cuda import CudaBatch
from pbsim.contact import default_scene
m = pbsim.load(sys.argv[1]); sc = default_scene(m)
b = CudaBatch(m, sys.argv[2], sc, batch=16384, layout=sys.argv[3]); b.set_state(None); b.advance(1, 0.01); b.synchronize()
print(f'FIRST {sys.argv[2]} {sys.argv[3]} B 16384: process start to first step {time.perf_counter() - t0:.2f} s', flush=True)
" "$MJCF" "${IL%%:*}" "${IL##*:}" 2>&1 | grep "FIRST\|Error" | tee -a "$OUT/summary.txt"
  done

  say "2. agreement: real GPU vs CPU (gym humanoid, floor and contact between bodies)"
  timeout 90 python3 - "$MJCF" <<'EOF' 2>&1 | grep -v Warn | tee "$LOGS/agreement.txt" "$OUT/agreement.txt"
import sys, time
import numpy as np
import pbsim
from pbsim.backends.cuda import CudaBatch
from pbsim.contact import default_scene
from pbsim.integrators import State, make
m = pbsim.load(sys.argv[1]); sc = default_scene(m)
rng = np.random.default_rng(0); B = 8
q = np.tile(m.default_configuration(), (B, 1)); v = 0.01 * rng.standard_normal((B, m.nv))
for integ, dt, lays in (("euler", 0.005, ("aos", "soa")), ("pbad", 0.02, ("aos",)), ("pbfd", 0.02, ("aos", "soa"))):
    st = State.make(m, q.copy(), v.copy()); I = make(integ, m, sc)
    for _ in range(20):
        st, _ = I.step(st, pbsim.Control(), dt)
    for lay in lays:
        t0 = time.perf_counter()
        g = CudaBatch(m, integ, sc, B, layout=lay); g.set_state(q, v); g.advance(20, dt); g.synchronize()
        gq, gv = g.state()
        print(f"AGREE {integ} {lay} B={B} 20 steps of {dt:g} s: max|dq| {np.abs(gq - st.q).max():.2e} "
              f"max|dv| {np.abs(gv - st.v).max():.2e} ({time.perf_counter() - t0:.1f} s)", flush=True)
EOF

  say "2c. ne_dry's disagreement on the device (fourth run: 2.2e-2 after 20 steps): step by step, with its LCP info"
  timeout 60 env PBSIM_CUDA_ALLOW=ne_dry python3 - "$MJCF" <<'EOF' 2>&1 | grep -v Warn | tee -a "$LOGS/agreement.txt" "$OUT/agreement.txt"
import sys
import numpy as np
import pbsim
from pbsim.backends.cuda import CudaBatch
from pbsim.contact import default_scene
from pbsim.integrators import State, make
m = pbsim.load(sys.argv[1]); sc = default_scene(m, body_contact=False)
rng = np.random.default_rng(0); B = 8; dt = 0.02
q = np.tile(m.default_configuration(), (B, 1)); v = 0.01 * rng.standard_normal((B, m.nv))
st = State.make(m, q.copy(), v.copy()); I = make("ne_dry", m, sc)
g = CudaBatch(m, "ne_dry", sc, B, layout="aos"); g.set_state(q, v)
for k in range(20):
    st, info = I.step(st, pbsim.Control(), dt)
    g.advance(1, dt); g.synchronize()
    gq, gv = g.state(); gi = g.solver_info()
    w = int(np.abs(gv - st.v).max(axis=1).argmax())
    print(f"NEDRY step {k + 1}: max|dq| {np.abs(gq - st.q).max():.2e} max|dv| {np.abs(gv - st.v).max():.2e}; worst row {w}: "
          f"GPU [pivots, residual, converged, contacts] {[float(f'{x:.3g}') for x in gi[w]]}, CPU "
          f"[{int(info.iterations[w])}, {info.residual[w]:.3g}, {int(info.converged[w])}, {int(info.extra['active_contacts'][w])}]", flush=True)
EOF

  if [ -f scripts/checks/pbfd_drops.py ]; then
    say "2b. pbfd drops on the GPU (issue 30): 16,384 starts, 2 s, dt 5/20/50 ms"
    timeout 110 python3 scripts/checks/pbfd_drops.py --device cuda --batch 16384 --dt 0.005,0.02,0.05 --mjcf "$MJCF" 2>&1 \
      | grep "^|\|^pbfd" | tee "$LOGS/pbfd_drops.txt" "$OUT/pbfd_drops.txt"
  fi
  say "3a. throughput with contact between bodies (the default scene): euler, pbad, pbfd; 16k/64k; aos/soa"
  timeout 120 python3 scripts/bench/bench_gpu.py --cases g --mjcf "$MJCF" --integrators euler,pbad,pbfd \
    --batches 16384,65536 --layouts aos,soa --schedules kernel --no-cpu --no-check --min-time 0.3 --max-steps 400 \
    --png "$OUT/bench_g.png" 2>&1 | tee "$LOGS/bench_g.txt" "$OUT/bench_g.txt"
  say "3d. threads per block for pbad (aos) and pbfd (soa), 16k and 64k: tpb 64 / 256 (128: 3a)"
  for TPB in 64 256; do
    for IL in pbad:aos pbfd:soa; do
      timeout 40 python3 scripts/bench/bench_gpu.py --cases g --mjcf "$MJCF" --integrators "${IL%%:*}" --batches 16384,65536 \
        --layouts "${IL##*:}" --schedules kernel --no-cpu --no-check --min-time 0.3 --max-steps 200 --tpb $TPB \
        --png "$LOGS/bench_tpb.png" 2>&1 | grep "^row:" | sed "s/^/tpb $TPB /" | tee -a "$LOGS/bench_tpb.txt" "$OUT/bench_g.txt"
    done
  done
  if [ "${GPU_CHECK_EXTRA:-0}" = 1 ]; then
    say "3b. floor only (as the pre-issue-31 table): euler, pbad"
    timeout 60 python3 scripts/bench/bench_gpu.py --cases g --mjcf "$MJCF" --integrators euler,pbad --no-body-contact \
      --batches 16384,65536 --layouts aos,soa --schedules kernel --no-cpu --no-check --min-time 0.3 --max-steps 400 \
      --png "$LOGS/bench_floor.png" 2>&1 | grep "^| g\|^row:" | tee "$LOGS/bench_floor.txt"
    say "3c. noinline cost: pbad fully inlined (PBSIM_CUDA_NOINLINE=none), aos, against 3a's aos rows"
    timeout 45 env PBSIM_CUDA_NOINLINE=none python3 scripts/bench/bench_gpu.py --cases g --mjcf "$MJCF" --integrators pbad \
      --batches 16384,65536 --layouts aos --schedules kernel --no-cpu --no-check --min-time 0.3 --max-steps 400 \
      --png "$LOGS/bench_inlined.png" 2>&1 | grep "^| g\|^row:" | tee "$LOGS/bench_inlined.txt"
    say "3e. threads per block: euler soa 64k, tpb 64 / 128 / 256"
    for TPB in 64 128 256; do
      timeout 30 python3 scripts/bench/bench_gpu.py --cases g --mjcf "$MJCF" --integrators euler --batches 65536 --layouts soa \
        --schedules kernel --no-cpu --no-check --min-time 0.3 --max-steps 400 --tpb $TPB --png "$LOGS/bench_tpb.png" 2>&1 \
        | grep "^row:" | sed "s/^/tpb $TPB /" | tee -a "$LOGS/bench_tpb.txt"
    done
  fi
  say "throughput done"
fi

say "4. MJX on the same file: Euler at 5 ms (as euler's rows), MJX's humanoid solver settings, fp32 then fp64"
if [ -n "$MJCF" ] && python3 -c "import jax, mujoco.mjx" > /dev/null 2>&1; then
  for X64 in 0 1; do
    timeout 100 python3 - "$MJCF" "$X64" <<'EOF' 2>&1 | grep -v "^ \|^Traceback" | tail -4 | tee -a "$LOGS/mjx.txt" "$OUT/summary.txt"
import sys, time
import jax
if sys.argv[2] == "1":
    jax.config.update("jax_enable_x64", True)
import mujoco
from mujoco import mjx
mm = mujoco.MjModel.from_xml_path(sys.argv[1])
# like for like with pbsim's euler rows: Euler at 5 ms (the file has RK4 at 3 ms and PGS, which MJX
# does not take); MJX's own humanoid test model's solver settings (Newton, 1 iteration, 4 line search)
mm.opt.timestep = 0.005
mm.opt.integrator = mujoco.mjtIntegrator.mjINT_EULER
mm.opt.solver = mujoco.mjtSolver.mjSOL_NEWTON
mm.opt.iterations, mm.opt.ls_iterations = 1, 4
mx = mjx.put_model(mm)
d0 = mjx.put_data(mm, mujoco.MjData(mm))
B = 32768
keys = jax.random.split(jax.random.PRNGKey(0), B)
batch = jax.vmap(lambda k: d0.replace(qvel=0.01 * jax.random.normal(k, (mm.nv,), dtype=d0.qvel.dtype)))(keys)
def run(d):
    return jax.lax.scan(lambda d, _: (jax.vmap(mjx.step, in_axes=(None, 0))(mx, d), None), d, None, length=100)[0]
run = jax.jit(run)
t0 = time.perf_counter(); jax.block_until_ready(run(batch)); tc = time.perf_counter() - t0
t0 = time.perf_counter(); out = jax.block_until_ready(run(batch)); el = time.perf_counter() - t0
print(f"MJX {mujoco.__version__} jax {jax.__version__} {jax.devices()[0]} {d0.qpos.dtype} B={B} Euler 5 ms: "
      f"{B * 100 / el:,.0f} steps/s (compile {tc:.0f} s; root z {float(out.qpos[:, 2].min()):.3f}..{float(out.qpos[:, 2].max()):.3f} m)", flush=True)
EOF
  done
else
  say "MJX skipped: jax / mujoco-mjx not importable (or no humanoid.xml)"
fi

if [ -n "$MJCF" ]; then
  say "5. the PGM forms still unmeasured on the device (pbd_nmdp, pbd_nmdp_zo floor; nmdp with contact between bodies): waiting for their compiles (at most until 480 s)"
  while [ $(( $(date +%s) - T0 )) -lt 480 ]; do
    alive=0; for p in "${NMDP_PIDS[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
    [ $alive = 0 ] && break; sleep 5
  done
  grep -h "compiled\|Error" "$LOGS"/pre_*nmdp*.log | cut -c1-300 | sort | tee -a "$OUT/summary.txt"
  for IW in pbd_nmdp:floor pbd_nmdp_zo:floor nmdp:bodies; do
    I=${IW%%:*}; W=${IW##*:}
    if grep -q "compiled $I aos $W" "$LOGS/pre_${I}_aos_${W}.log" 2>/dev/null && grep -q "compiled $I cpu $W" "$LOGS/pre_${I}_cpu_${W}.log" 2>/dev/null; then
      timeout 60 python3 - "$MJCF" "$I" "$W" <<'EOF' 2>&1 | grep -v Warn | tee -a "$LOGS/agreement.txt" "$OUT/agreement.txt"
import sys, time
import numpy as np
import pbsim
from pbsim.backends.cuda import CudaBatch
from pbsim.contact import default_scene
from pbsim.integrators import State, make
integ, what = sys.argv[2], sys.argv[3]
m = pbsim.load(sys.argv[1]); sc = default_scene(m, body_contact=(what == "bodies"))
rng = np.random.default_rng(0); B = 8; dt = 0.02
q = np.tile(m.default_configuration(), (B, 1)); v = 0.01 * rng.standard_normal((B, m.nv))
st = State.make(m, q.copy(), v.copy()); I = make(integ, m, sc)
for _ in range(20):
    st, _ = I.step(st, pbsim.Control(), dt)
t0 = time.perf_counter()
g = CudaBatch(m, integ, sc, B, layout="aos"); g.set_state(q, v); g.advance(20, dt); g.synchronize()
gq, gv = g.state()
print(f"AGREE {integ} ({what}) aos B={B} 20 steps of {dt:g} s: max|dq| {np.abs(gq - st.q).max():.2e} "
      f"max|dv| {np.abs(gv - st.v).max():.2e} ({time.perf_counter() - t0:.1f} s)", flush=True)
EOF
      timeout 60 python3 scripts/bench/bench_gpu.py --cases g --mjcf "$MJCF" --integrators "$I" \
        $([ "$W" = floor ] && echo --no-body-contact) --batches 4096,16384 --layouts aos --schedules kernel --no-cpu \
        --no-check --min-time 0.3 --max-steps 100 --png "$LOGS/bench_nmdp.png" 2>&1 | grep "^row:\|Error" \
        | sed "s/^/$W /" | tee -a "$LOGS/bench_nmdp.txt" "$OUT/bench_nmdp.txt"
    else
      say "$I ($W): its compile has not finished (pre_${I}_*_${W}.log); skipped"
    fi
  done
  kill "${NMDP_PIDS[@]}" 2>/dev/null
fi

if [ "${GPU_CHECK_TWINS:-0}" = 1 ]; then
  say "the broad twin check (cudasim_check.py on the GPU)"
  timeout 300 python3 tests/backends/cudasim_check.py > "$LOGS/cudasim_check_gpu.log" 2>&1
  grep -h "^RESULT\|Error" "$LOGS/cudasim_check_gpu.log" | tail -3 | cut -c1-2000 | tee -a "$OUT/summary.txt"
fi
say "done"
tar czf "$OUT/logs.tgz" -C "$LOGS" . && echo "logs: $OUT/logs.tgz"
