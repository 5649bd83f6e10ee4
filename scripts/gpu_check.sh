#!/usr/bin/env bash
# The real-GPU checks as one prepared run for a lent GPU machine (no network there; about 7 minutes
# plus the machine's start; every stage prints as it goes and has its own timeout, so a cut-off run
# keeps what was done).  Lessons of the second H200 run (docs/benchmarks/gpu.md) built in: every
# kernel the timings need is compiled first, in parallel, and nothing else uses the GPU while a
# throughput row is timed.  In order:
#   0. in the background from the start: every CUDA kernel of stages 1 and 3 and the CPU references
#      of the agreement, each in its own process (16 cores), filling the disk caches
#   1. compile time per stage, cold (its own empty cache) and from the disk cache in a second
#      process: process start to the first step (scripts/bench/bench_compile.py --device cuda --on-gpu)
#   2. real GPU vs CPU agreement on the humanoid with its floor and contact between bodies: euler
#      (both layouts), pbad, pbfd, 20 steps of 8 trajectories; then pbfd's 16k drops (issue 30)
#   3. throughput on gymnasium's humanoid (scripts/bench/bench_gpu.py --cases g): euler, pbad, pbfd at
#      B 16k / 64k in both layouts with contact between bodies; euler and pbad with the floor only
#      (as the table before issue 31); pbad fully inlined (PBSIM_CUDA_NOINLINE=none) against its
#      out-of-line default; euler threads per block 64/128/256; nmdp
#      with the floor only if its (slow) compile finished
#   4. MJX on the same file, if jax and mujoco-mjx are importable (carried or in the image)
#   GPU_CHECK_TWINS=1 adds the broad twin check (tests/backends/cudasim_check.py) at the end.
# Carried files (docs/benchmarks/gpu.md, "How to run on a lent GPU"): .whl/*.whl (numpy<2.5, trimesh,
# rtree, mujoco), .carry/humanoid.xml (gymnasium's).  $OUT gets summary.txt, bench_g.png and
# logs.tgz (every log).
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
  for I in euler pbad; do pre $I aos floor "" 300; pre $I soa floor "" 300; pre $I cpu floor "" 300; done
  pre pbad aos bodies PBSIM_CUDA_NOINLINE=none 300
  NMDP_PIDS=()
  for L in aos soa cpu; do pre nmdp $L floor "" 420; NMDP_PIDS+=("${PIDS[-1]}"); unset 'PIDS[-1]'; done
fi

say "1. compile per stage, cold and cached (process start to first step)"
timeout 140 python3 scripts/bench/bench_compile.py --device cuda --on-gpu --integrators euler,pbad --layout soa \
  ${MJCF:+--mjcf $MJCF} --batch 16384 2>&1 | tee "$LOGS/compile_gpu.txt"
say "compile done"

if [ -n "$MJCF" ]; then
  say "waiting for the background compiles"
  wait "${PIDS[@]}"
  grep -h "compiled\|Error" "$LOGS"/pre_*.log | cut -c1-300 | sort | tee -a "$OUT/summary.txt"

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

  if [ -f scripts/checks/pbfd_drops.py ]; then
    say "2b. pbfd drops on the GPU (issue 30): 16,384 starts, 2 s, dt 5/20/50 ms"
    timeout 110 python3 scripts/checks/pbfd_drops.py --device cuda --batch 16384 --dt 0.005,0.02,0.05 --mjcf "$MJCF" 2>&1 \
      | grep "^|\|^pbfd" | tee "$LOGS/pbfd_drops.txt" "$OUT/pbfd_drops.txt"
  fi
  say "3a. throughput with contact between bodies (the default scene): euler, pbad, pbfd; 16k/64k; aos/soa"
  timeout 120 python3 scripts/bench/bench_gpu.py --cases g --mjcf "$MJCF" --integrators euler,pbad,pbfd \
    --batches 16384,65536 --layouts aos,soa --schedules kernel --no-cpu --no-check --min-time 0.3 --max-steps 400 \
    --png "$OUT/bench_g.png" 2>&1 | tee "$LOGS/bench_g.txt" "$OUT/bench_g.txt"
  say "3b. floor only (as the pre-issue-31 table): euler, pbad"
  timeout 60 python3 scripts/bench/bench_gpu.py --cases g --mjcf "$MJCF" --integrators euler,pbad --no-body-contact \
    --batches 16384,65536 --layouts aos,soa --schedules kernel --no-cpu --no-check --min-time 0.3 --max-steps 400 \
    --png "$LOGS/bench_floor.png" 2>&1 | grep "^| g\|^row:" | tee "$LOGS/bench_floor.txt"
  say "3c. noinline cost: pbad fully inlined (PBSIM_CUDA_NOINLINE=none), aos, against 3a's aos rows"
  timeout 45 env PBSIM_CUDA_NOINLINE=none python3 scripts/bench/bench_gpu.py --cases g --mjcf "$MJCF" --integrators pbad \
    --batches 16384,65536 --layouts aos --schedules kernel --no-cpu --no-check --min-time 0.3 --max-steps 400 \
    --png "$LOGS/bench_inlined.png" 2>&1 | grep "^| g\|^row:" | tee "$LOGS/bench_inlined.txt"
  say "3d. threads per block: euler soa 64k, tpb 64 / 128 / 256"
  for TPB in 64 128 256; do
    timeout 30 python3 scripts/bench/bench_gpu.py --cases g --mjcf "$MJCF" --integrators euler --batches 65536 --layouts soa \
      --schedules kernel --no-cpu --no-check --min-time 0.3 --max-steps 400 --tpb $TPB --png "$LOGS/bench_tpb.png" 2>&1 \
      | grep "^row:" | sed "s/^/tpb $TPB /" | tee -a "$LOGS/bench_tpb.txt"
  done
  say "3f. nmdp, floor only, if its background compile finished"
  if grep -q "compiled nmdp soa floor" "$LOGS/pre_nmdp_soa_floor.log" 2>/dev/null; then
    timeout 60 python3 scripts/bench/bench_gpu.py --cases g --mjcf "$MJCF" --integrators nmdp --no-body-contact \
      --batches 16384 --layouts aos,soa --schedules kernel --no-cpu --no-check --min-time 0.3 --max-steps 100 \
      --png "$LOGS/bench_nmdp.png" 2>&1 | grep "^| g\|^row:\|Error" | tee "$LOGS/bench_nmdp.txt"
  else
    say "nmdp's compile has not finished (pre_nmdp_*.log); skipped"
  fi
  kill "${NMDP_PIDS[@]}" 2>/dev/null
  say "throughput done"
fi

say "4. MJX on the same file"
if [ -n "$MJCF" ] && python3 -c "import jax, mujoco.mjx" > /dev/null 2>&1; then
  timeout 120 python3 - "$MJCF" <<'EOF' 2>&1 | tee "$LOGS/mjx.txt"
import sys, time
import jax, jax.numpy as jnp, mujoco
from mujoco import mjx
mm = mujoco.MjModel.from_xml_path(sys.argv[1])
mm.opt.timestep = 0.005
mx = mjx.put_model(mm)
d0 = mjx.put_data(mm, mujoco.MjData(mm))
for B in (16384, 32768):
    keys = jax.random.split(jax.random.PRNGKey(0), B)
    batch = jax.vmap(lambda k: d0.replace(qvel=0.01 * jax.random.normal(k, (mm.nv,))))(keys)
    def run(d):
        return jax.lax.scan(lambda d, _: (jax.vmap(mjx.step, in_axes=(None, 0))(mx, d), None), d, None, length=100)[0]
    run = jax.jit(run)
    t0 = time.perf_counter(); jax.block_until_ready(run(batch)); tc = time.perf_counter() - t0
    t0 = time.perf_counter(); jax.block_until_ready(run(batch)); el = time.perf_counter() - t0
    print(f"MJX {jax.__version__} {jax.devices()[0]} B={B}: {B * 100 / el:,.0f} steps/s (compile {tc:.0f} s)", flush=True)
EOF
else
  say "MJX skipped: jax / mujoco-mjx not importable (or no humanoid.xml)"
fi

if [ "${GPU_CHECK_TWINS:-0}" = 1 ]; then
  say "the broad twin check (cudasim_check.py on the GPU)"
  timeout 300 python3 tests/backends/cudasim_check.py > "$LOGS/cudasim_check_gpu.log" 2>&1
  grep -h "^RESULT\|Error" "$LOGS/cudasim_check_gpu.log" | tail -3 | cut -c1-2000 | tee -a "$OUT/summary.txt"
fi
say "done"
tar czf "$OUT/logs.tgz" -C "$LOGS" . && echo "logs: $OUT/logs.tgz"
