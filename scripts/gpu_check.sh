#!/usr/bin/env bash
# The real-GPU checks, as one prepared run for a lent GPU machine (no network there): the CUDA
# path against the CPU kernels on tiny batches (tests/backends/cudasim_check.py, the device half of
# test_cuda.py::test_real_gpu_matches_cpu), the contact step kernels of ne_mdp / nmdp / pbd_nmdp
# (tests/integrators/_cudasim_ne_mdp.py), then scripts/bench_gpu.py on the 40-link chain.
# Logs go to $OUT (or ./gpu_out).  Uses the machine's python3 with numpy, numba, numba-cuda, scipy;
# PYTHONPATH gives pbsim and pbsim_models from this checkout (nothing is installed).
#     bash scripts/gpu_check.sh [BENCH_SECONDS]
set -u
OUT=${OUT:-gpu_out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:$PWD/models:${PYTHONPATH:-}
nvidia-smi -L 2>&1 | tee "$OUT/env.txt"
# carried wheels (.whl/): numpy < 2.5 (numba-cuda's CUDA target uses np.row_stack, gone in 2.5),
# trimesh and rtree (pbsim.contact's meshes), absent from the machine's image
if ls .whl/*.whl > /dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
  export PYTHONPATH=/tmp/site:$PYTHONPATH
fi
python3 -c "import sys, numpy, numba; print(sys.version.split()[0], 'numpy', numpy.__version__, 'numba', numba.__version__)" | tee -a "$OUT/env.txt"
python3 -c "from pbsim.backends.cuda import available, toolkit_missing; print('available', available(), 'toolkit_missing', toolkit_missing())" 2>&1 | tee -a "$OUT/env.txt"
T0=$(date +%s)
# the three checks at once (16 cores; each compiles its own CPU and CUDA kernels)
timeout 420 python3 tests/backends/cudasim_check.py > "$OUT/cuda_check.log" 2>&1 &
for M in nmdp pbd_nmdp; do
  (cd tests/integrators && timeout 420 python3 -c "
import sys, numpy as np
import _cudasim_ne_mdp as c
np.savez('/tmp/$M.npz', **c.cpu_outputs('$M'))
" && timeout 300 python3 _cudasim_ne_mdp.py /tmp/$M.npz $M) > "$OUT/twin_$M.log" 2>&1 &
done
wait
echo "checks: $(( $(date +%s) - T0 )) s" | tee -a "$OUT/env.txt"
grep -h "^RESULT\|^DIFF\|^ITER\|Error\|error" "$OUT"/cuda_check.log "$OUT"/twin_*.log | head -40
BENCH=${1:-150}
timeout "$BENCH" python3 scripts/bench_gpu.py --batches 1024,16384 --min-time 0.3 --cases c,d > "$OUT/bench_gpu.log" 2>&1
echo "bench rc $?; total $(( $(date +%s) - T0 )) s" | tee -a "$OUT/env.txt"
tail -30 "$OUT/bench_gpu.log"
