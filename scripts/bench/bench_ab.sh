#!/bin/bash
# before/after benchmark runs, alternating, twice each
out=${OUT:-/tmp/bench_ab}; mkdir -p $out  # BEFORE/AFTER trees: git worktree add /tmp/before <rev>; /tmp/after <rev>
for rep in 1 2; do
  for b in bench_dynamics bench_spd bench_variational bench_pbad; do
    for side in before after; do
      cd /tmp/$side
      echo "=== $side $b rep$rep $(date +%T) load $(cut -d' ' -f1 /proc/loadavg)" >> $out/log
      args=""
      [ $b = bench_dynamics ] && args="--png /tmp/bench_ab/dyn_$side.png"
      [ $b = bench_spd ] && args="--png /tmp/bench_ab/spd_$side.png"
      s=scripts/bench/$b.py; [ -f $s ] || s=scripts/$b.py  # a tree from before scripts/bench/
      PYTHONPATH=/tmp/$side:/tmp/$side/models timeout 1500 /work/venv/bin/python $s $args > $out/${b}_${side}_$rep.txt 2>&1
      echo "rc=$? $(date +%T)" >> $out/log
    done
  done
done
