#!/usr/bin/env bash
# The real-GPU checks as one prepared run for a lent GPU machine (no network there; under 8 minutes
# with the machine's start; every stage prints as it goes and has its own timeout, so a cut-off run
# keeps what was done).  In order:
#   1. real GPU vs CPU agreement (euler + floor contact on the humanoid, pbad on a chain; then the
#      full tests/backends/cudasim_check.py in the background)
#   2. compile time per stage, cold and from the disk cache: process start to the first step, in a
#      fresh process and in a second one (scripts/bench_compile.py --device cuda --on-gpu)
#   3. throughput at B 16k / 64k of euler, pbad, pbfd, nmdp on gymnasium's humanoid with its floor,
#      both layouts (scripts/bench_gpu.py --cases g), then the cost of the out-of-line device
#      functions (euler, everything inlined: PBSIM_CUDA_NOINLINE=none) and threads per block
#   4. MJX on the same file, if jax and mujoco-mjx are importable (carried or in the image)
# Carried files (docs/benchmarks/gpu.md, "How to run on a lent GPU"): .whl/*.whl (numpy<2.5, trimesh,
# rtree, mujoco, mujoco-mjx), .carry/humanoid.xml (gymnasium's).  Logs go to $OUT (or ./gpu_out).
#     bash scripts/gpu_check.sh
set -u
OUT=${OUT:-gpu_out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:$PWD/models:${PYTHONPATH:-}
export PBSIM_CACHE_DIR=${PBSIM_CACHE_DIR:-/tmp/pbsim_gpu_check_cache}
T0=$(date +%s)
say() { echo "[$(( $(date +%s) - T0 )) s] $*" | tee -a "$OUT/summary.txt"; }
nvidia-smi -L 2>&1 | tee "$OUT/env.txt"
if ls .whl/*.whl > /dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>&1 | tail -3
  export PYTHONPATH=/tmp/site:$PYTHONPATH
fi
python3 -c "import sys, numpy, numba; print(sys.version.split()[0], 'numpy', numpy.__version__, 'numba', numba.__version__)" 2>&1 | tee -a "$OUT/env.txt"
python3 -c "from pbsim.backends.cuda import available, device_name, toolkit_missing, toolchain_versions
print('device', device_name()); print('toolkit_missing', toolkit_missing()); print(toolchain_versions())" 2>&1 | tee -a "$OUT/env.txt"
MJCF=.carry/humanoid.xml
[ -f "$MJCF" ] || { say "no $MJCF: the humanoid rows are skipped (carry gymnasium's humanoid.xml)"; MJCF=""; }

# the broad twin check in the background (16 cores; its own CPU and CUDA compiles)
timeout 300 python3 tests/backends/cudasim_check.py > "$OUT/cudasim_check_gpu.log" 2>&1 &
BG=$!

say "1. agreement: real GPU vs CPU"
timeout 150 python3 - "$MJCF" <<'EOF' 2>&1 | tee "$OUT/agreement.txt"
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
timeout 150 python3 scripts/bench_compile.py --device cuda --on-gpu --integrators euler,pbad --layout soa \
  ${MJCF:+--mjcf $MJCF} --batch 16384 2>&1 | tee "$OUT/compile_gpu.txt"
say "compile done"

if [ -n "$MJCF" ]; then
  say "3. throughput, gym humanoid + floor (kernels compiled in parallel first)"
  PIDS=()
  for I in euler pbad pbfd nmdp; do for L in aos soa; do
    timeout 120 python3 -c "
import pbsim; from pbsim.backends.cuda import CudaBatch; from pbsim.contact import default_scene
m = pbsim.load('$MJCF'); b = CudaBatch(m, '$I', default_scene(m), batch=256, layout='$L'); b.set_state(None)
b.advance(1, 0.01); b.synchronize(); print('compiled $I $L')" > "$OUT/precompile_${I}_$L.log" 2>&1 &
    PIDS+=($!)
  done; done
  timeout 120 env PBSIM_CUDA_NOINLINE=none python3 -c "
import pbsim; from pbsim.backends.cuda import CudaBatch; from pbsim.contact import default_scene
m = pbsim.load('$MJCF'); b = CudaBatch(m, 'euler', default_scene(m), batch=256, layout='soa'); b.set_state(None)
b.advance(1, 0.01); b.synchronize(); print('compiled euler soa inlined')" > "$OUT/precompile_inlined.log" 2>&1 &
  PIDS+=($!)
  wait "${PIDS[@]}"
  tail -n 2 "$OUT"/precompile_*.log | grep -v "^$" | tee -a "$OUT/summary.txt"
  say "precompile done"
  timeout 120 python3 scripts/bench_gpu.py --cases g --mjcf "$MJCF" --integrators euler,pbad,pbfd,nmdp \
    --batches 16384,65536 --layouts aos,soa --schedules kernel --no-cpu --min-time 0.3 --max-steps 400 \
    --png "$OUT/bench_g.png" 2>&1 | tee "$OUT/bench_g.txt"
  say "noinline cost: euler, everything inlined (PBSIM_CUDA_NOINLINE=none), soa"
  timeout 45 env PBSIM_CUDA_NOINLINE=none python3 scripts/bench_gpu.py --cases g --mjcf "$MJCF" --integrators euler \
    --batches 16384,65536 --layouts soa --schedules kernel --no-cpu --min-time 0.3 --max-steps 400 \
    --png "$OUT/bench_inlined.png" 2>&1 | grep "^| g\|^row:" | tee "$OUT/bench_inlined.txt"
  for TPB in 64 256; do
    timeout 30 python3 scripts/bench_gpu.py --cases g --mjcf "$MJCF" --integrators euler --batches 65536 --layouts soa \
      --schedules kernel --no-cpu --min-time 0.3 --max-steps 400 --tpb $TPB --png "$OUT/bench_tpb.png" 2>&1 \
      | grep "^| g\|^row:" | sed "s/^/tpb $TPB /" | tee -a "$OUT/bench_tpb.txt"
  done
  say "throughput done"
fi

say "4. MJX on the same file"
if [ -n "$MJCF" ] && python3 -c "import jax, mujoco.mjx" > /dev/null 2>&1; then
  timeout 120 python3 - "$MJCF" <<'EOF' 2>&1 | tee "$OUT/mjx.txt"
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
grep -h "^RESULT\|Error" "$OUT/cudasim_check_gpu.log" | tail -3 | cut -c1-2000 | tee -a "$OUT/summary.txt"
say "done"
