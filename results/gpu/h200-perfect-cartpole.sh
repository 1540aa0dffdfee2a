#!/bin/bash
# The planner's ceiling on cartpole-swingup (benchmarks/perfect_model_mpc.py), one episode per CPU core of the
# device machine: the simulator work is CPU-bound, and 12 start states in parallel take the time of one.
# Tried on 2026-11-26 (session 17) on the H200 machine (16-CPU Xeon): no episode finished within the 560 s
# limit with 12 in parallel (on the 2-core Xeon here one takes about 450 s alone), so it returned nothing;
# the ceiling is still to be measured on a free core here (benchmarks/perfect_model_mpc.py cartpole-swingup).
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD/src MUJOCO_GL=egl PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1
lscpu | grep -E "Model name|^CPU\(s\)" | tee $OUT/machine.txt
cd benchmarks
for seed in $(seq 0 11); do
  timeout 560 python3 perfect_model_mpc.py cartpole-swingup --episodes 1 --seed $seed > $OUT/perfect-$seed.jsonl 2> $OUT/perfect-$seed.err &
done
wait
cat $OUT/perfect-*.jsonl | grep '"return"'
