#!/bin/bash
# finger-spin seed 0 with weight averaging: its kept models at 4000-7000 updates re-tested on the same 20 start
# states, as the preset's record of this seed was (finger-spin/seed-0/retests/h200-fp32-U.json), so the two
# compare model by model. out-gpu/finger-avg-s0/run-00 held the run's config.yaml, run_info.json and kept
# checkpoints/model-U.pt files, carried to the device (the run: results/cpu/finger-spin/average-0.99/seed-0).
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD/src MUJOCO_GL=egl PYTHONUNBUFFERED=1 OMP_NUM_THREADS=4
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/machine.txt
for u in 4000 5000 6000 7000; do
  timeout -s INT 300 python3 -m planetrl.cli eval --run out-gpu/finger-avg-s0/run-00 --checkpoint $u --episodes 20 --device cuda \
    --json $OUT/finger-s0-avg-eval-$u.json --no-progress > /tmp/eval-$u.log 2>&1 &
  pids="$pids $!"
done
wait $pids
tail -n 2 /tmp/eval-*.log
