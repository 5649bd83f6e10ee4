#!/usr/bin/env bash
# The real-GPU checks as one prepared run for a lent GPU machine (no network there; under 8 minutes
# with the machine's start; every stage prints as it goes and has its own timeout, so a cut-off run
# keeps what was done).  In order:
#   1. real GPU vs CPU agreement (euler + floor contact on the humanoid, pbad on a chain; then the
#      full tests/backends/cudasim_check.py in the background)
#   2. compile time per stage, cold and from the disk cache: process start to the first step, in a
#      fresh process and in a second one (scripts/bench_compile.py --device cuda --on-gpu)
#   3. throughput at B 16k / 64k of euler, pbad, pbfd, nmdp on gymnasium's humanoid with its floor
#      and contact between bodies, both layouts (scripts/bench_gpu.py --cases g); euler, pbad, nmdp
#      with the floor only (as the table before issue 31); the cost of the out-of-line device
#      functions (pbad, everything inlined: PBSIM_CUDA_NOINLINE=none); threads per block 64/256;
#      pbfd's 16k drops (issue 30) when scripts/pbfd_drops.py exists.  Every kernel of stage 3 is
#      compiled in the background from the start, in parallel with stages 1-2.
#   4. MJX on the same file, if jax and mujoco-mjx are importable (carried or in the image)
# Carried files (docs/benchmarks/gpu.md, "How to run on a lent GPU"): .whl/*.whl (numpy<2.5, trimesh,
# rtree, mujoco, mujoco-mjx), .carry/humanoid.xml (gymnasium's).  Logs go to $OUT (or ./gpu_out).
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
[ -f "$MJCF" ] || { say "no $MJCF: the humanoid rows are skipped (carry gymnasium's humanoid.xml)"; MJCF=""; }

# In the background from the start (16 cores): the broad twin check, and every kernel stage 3 times
# (CUDA, both layouts, with and without contact between bodies, euler fully inlined) and the CPU
# references of its GPU-vs-CPU check, each in its own process (they fill the disk caches; stages 1
# and 2 run meanwhile, so their cold compile times are taken with these compiles beside them).
timeout 300 python3 tests/backends/cudasim_check.py > "$LOGS/cudasim_check_gpu.log" 2>&1 &
BG=$!
PRE='
import os, sys, numpy as np, pbsim
from pbsim.contact import default_scene
integ, lay, what = sys.argv[1:4]
m = pbsim.load(sys.argv[4])
sc = default_scene(m, body_contact=False) if what == "floor" else default_scene(m)
if lay == "cpu":  # what bench_gpu.py checks against: the integrator on the CPU
    from pbsim.integrators import State, make
    make(integ, m, sc).step(State.make(m, np.tile(m.default_configuration(), (2, 1)), None), pbsim.Control(), 0.01)
else:
    from pbsim.backends.cuda import CudaBatch
    b = CudaBatch(m, integ, sc, batch=256, layout=lay); b.set_state(None); b.advance(1, 0.01); b.synchronize()
print("compiled", integ, lay, what, flush=True)
'
PIDS=()
if [ -n "$MJCF" ]; then
  pre() { timeout 240 env ${4:-} python3 -c "$PRE" "$1" "$2" "$3" "$MJCF" > "$LOGS/pre_$1_$2_$3${4:+_inl}.log" 2>&1 & PIDS+=($!); }
  for I in euler pbad pbfd nmdp; do pre $I aos bodies; pre $I soa bodies; pre $I cpu bodies; done
  for I in euler pbad nmdp; do pre $I aos floor; pre $I soa floor; pre $I cpu floor; done
  pre pbad aos bodies PBSIM_CUDA_NOINLINE=none
fi

say "1. agreement: real GPU vs CPU"
timeout 110 python3 - "$MJCF" <<'EOF' 2>&1 | tee "$LOGS/agreement.txt"
import sys, time
import numpy as np
import pbsim, pbsim_models
from pbsim.backends.cpu import CpuBatch
from pbsim.backends.cuda import CudaBatch
from pbsim.contact import default_scene, make_scene
mjcf = sys.argv[1]
if mjcf:
    m = pbsim.load(mjcf); scene = default_scene(m); what = "gym humanoid + floor"
else:
    m = pbsim_models.swimmer(); scene = make_scene(m, ground="plane"); what = "swimmer + plane"
rng = np.random.default_rng(0)
for integ, mm, sc, dt, n, name in (("euler", m, scene, 0.005, 20, what), ("pbad", pbsim_models.chain(3), None, 0.05, 5, "chain3")):
    B = 8
    q = np.tile(mm.default_configuration(), (B, 1)); v = 0.01 * rng.standard_normal((B, mm.nv))  # qpos0
    for lay in (("aos", "soa") if integ == "euler" else ("aos",)):
        t0 = time.perf_counter()
        g = CudaBatch(mm, integ, sc, B, layout=lay); g.set_state(q, v); g.advance(n, dt); g.synchronize()
        c = CpuBatch(mm, integ, sc, B); c.set_state(q, v); c.advance(n, dt)
        (gq, gv), (cq, cv) = g.state(), c.state()
        print(f"AGREE {integ} {name} {lay} B={B} steps={n}: max|dq| {np.abs(gq - cq).max():.2e} "
              f"max|dv| {np.abs(gv - cv).max():.2e} ({time.perf_counter() - t0:.1f} s with compiles)", flush=True)
EOF
say "agreement done"

say "2. compile per stage, cold and cached (process start to first step)"
timeout 130 python3 scripts/bench_compile.py --device cuda --on-gpu --integrators euler,pbad --layout soa \
  ${MJCF:+--mjcf $MJCF} --batch 16384 2>&1 | tee "$LOGS/compile_gpu.txt"
say "compile done"

if [ -n "$MJCF" ]; then
  say "3. throughput, gym humanoid + floor: waiting for the kernels compiled in the background"
  wait "${PIDS[@]}"
  grep -h "compiled\|Error" "$LOGS"/pre_*.log | cut -c1-300 | tee -a "$OUT/summary.txt"
  say "3a. with contact between bodies (the default scene): euler, pbad, pbfd, nmdp; 16k/64k; aos/soa"
  timeout 170 python3 scripts/bench_gpu.py --cases g --mjcf "$MJCF" --integrators euler,pbad,pbfd,nmdp \
    --batches 16384,65536 --layouts aos,soa --schedules kernel --no-cpu --min-time 0.3 --max-steps 400 \
    --png "$OUT/bench_g.png" 2>&1 | tee "$LOGS/bench_g.txt"
  say "3b. floor only (as the pre-issue-31 table): euler, pbad, nmdp"
  timeout 90 python3 scripts/bench_gpu.py --cases g --mjcf "$MJCF" --integrators euler,pbad,nmdp --no-body-contact \
    --batches 16384,65536 --layouts aos,soa --schedules kernel --no-cpu --min-time 0.3 --max-steps 400 \
    --png "$LOGS/bench_floor.png" 2>&1 | grep "^| g\|^row:\|^(g)" | tee "$LOGS/bench_floor.txt"
  say "3c. noinline cost: pbad, everything inlined (PBSIM_CUDA_NOINLINE=none), aos (its auto layout; euler is inlined already)"
  timeout 60 env PBSIM_CUDA_NOINLINE=none python3 scripts/bench_gpu.py --cases g --mjcf "$MJCF" --integrators pbad \
    --batches 16384,65536 --layouts aos --schedules kernel --no-cpu --no-check --min-time 0.3 --max-steps 400 \
    --png "$LOGS/bench_inlined.png" 2>&1 | grep "^| g\|^row:" | tee "$LOGS/bench_inlined.txt"
  say "3d. threads per block: euler soa 64k, tpb 64 / 256 (128 is in 3a)"
  for TPB in 64 256; do
    timeout 30 python3 scripts/bench_gpu.py --cases g --mjcf "$MJCF" --integrators euler --batches 65536 --layouts soa \
      --schedules kernel --no-cpu --no-check --min-time 0.3 --max-steps 400 --tpb $TPB --png "$LOGS/bench_tpb.png" 2>&1 \
      | grep "^| g\|^row:" | sed "s/^/tpb $TPB /" | tee -a "$LOGS/bench_tpb.txt"
  done
  if [ -f scripts/pbfd_drops.py ]; then
    say "3e. pbfd drops on the GPU (issue 30): 16,384 starts, dt 0.02, 2 s"
    timeout 90 python3 scripts/pbfd_drops.py --device cuda --batch 16384 --dt 0.02 --mjcf "$MJCF" 2>&1 | tee "$LOGS/pbfd_drops.txt"
  fi
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

wait "$BG" 2>/dev/null
say "background twin check (cudasim_check.py on the GPU), rc $?:"
grep -h "^RESULT\|Error" "$LOGS/cudasim_check_gpu.log" | tail -3 | cut -c1-2000 | tee -a "$OUT/summary.txt"
say "done"
tar czf "$OUT/logs.tgz" -C "$LOGS" . && echo "logs: $OUT/logs.tgz"
