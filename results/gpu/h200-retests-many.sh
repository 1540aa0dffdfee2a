#!/bin/bash
# h200-retests-many.sh NAME:U [NAME:U ...]: re-test kept models of one or more runs in one call (h200-retests.sh
# is its one-run form):
# each out-gpu/NAME/run-00 model at update U re-tested on the run's 20 start states side by side on the card
# (`planetrl eval --checkpoint U --episodes 20 --device cuda`, the run's planner in fp32), writing
# $OUT/NAME-eval-U.json (carry: .whl, .gl, out-gpu). THREADS: OpenMP threads each (2), TIMEOUT: seconds each (400).
# Ran on 2026-11-27 (session 25):
#   reacher-avg-s0:{6000,7000} reacher-easy-b16-s0:{6000,7000}
#     -> results/cpu/reacher-easy/{seed-0,batch-16/seed-0}/retests/h200-fp32-U.json
#   finger-avg09-s0:{6000,7000} finger-avg09-raw-s0:{6900,7000} (the trained weights, from trained_weights.py)
#     -> results/cpu/finger-spin/average-0.9/seed-0/retests/h200-fp32{,-trained}-U.json
#   cup-avg-s0:{6000,7000} cup-catch-b16-s0:{6000,7000}
#     -> results/cpu/cup-catch/{seed-0,batch-16/seed-0}/retests/h200-fp32-U.json
#   cup-avg-s0:5000 cup-catch-b16-s0:5000 reacher-avg-s0:5000 reacher-easy-b16-s0:5000
#     -> the same folders, h200-fp32-5000.json
#   finger-avg09-s0-seed100:7000 finger-avg09-raw-s0-seed100:7000 finger-avg-s0-seed100:7000
#   finger-avg-raw-s0-seed100:7000 (those models with run.seed 100 in config.yaml: 20 other start states)
#     -> results/cpu/finger-spin/{average-0.9/seed-0,seed-0}/retests/h200-fp32{,-trained}-seed100-7000.json
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD/src MUJOCO_GL=egl PYTHONUNBUFFERED=1 OMP_NUM_THREADS=${THREADS:-2}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/machine.txt
start=$(date +%s)
for pair in "$@"; do
  name=${pair%%:*}; u=${pair##*:}
  timeout -s INT ${TIMEOUT:-400} python3 -m planetrl.cli eval --run out-gpu/$name/run-00 --checkpoint $u --episodes 20 \
    --device cuda --json $OUT/$name-eval-$u.json --no-progress > /tmp/eval-$name-$u.log 2>&1 &
  pids="$pids $!"
done
wait $pids
echo "evaluations: $(( $(date +%s) - start )) s"
tail -n 2 /tmp/eval-*.log
