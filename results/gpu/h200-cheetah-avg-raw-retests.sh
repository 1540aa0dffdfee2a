#!/bin/bash
# cheetah-run seed 1 with weight averaging: the weights Adam trained (not their running average, which the run
# planned with) at 6900 and 7000 updates, re-tested on the same 20 start states as the averaged models: where
# averaging lifted the run, does the average plan better than the weights it averages? out-gpu/cheetah-avg-raw-s1
# held the run's config.yaml, run_info.json and checkpoints/model-U.pt files holding the trained weights of the
# run's previous.pt and latest.pt (the run: results/cpu/cheetah-run/average-0.99/seed-1).
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD/src MUJOCO_GL=egl PYTHONUNBUFFERED=1 OMP_NUM_THREADS=4
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/machine.txt
for u in 6900 7000; do
  timeout -s INT 110 python3 -m planetrl.cli eval --run out-gpu/cheetah-avg-raw-s1/run-00 --checkpoint $u --episodes 20 \
    --device cuda --json $OUT/cheetah-s1-avg-raw-eval-$u.json --no-progress > /tmp/eval-$u.log 2>&1 &
  pids="$pids $!"
done
wait $pids
tail -n 2 /tmp/eval-*.log
