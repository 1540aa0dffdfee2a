#!/bin/bash
# Six cpu-preset runs, one per paper task, sharing one GPU for 180 s: does a launch-bound card scale with runs?
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD/src MUJOCO_GL=egl PYTHONUNBUFFERED=1 OMP_NUM_THREADS=2
nvidia-smi --query-gpu=name --format=csv,noheader
for t in cartpole-swingup reacher-easy cheetah-run finger-spin cup-catch walker-walk; do
  timeout -s INT 200 python3 -m planetrl.cli train --preset cpu --task $t --set run.device=cuda --logdir /tmp/share/$t --no-progress > /tmp/share-$t.log 2>&1 &
  pids="$pids $!"
done
nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv -l 20 > $OUT/share-nvidia-smi.csv &
wait $pids
mkdir -p $OUT/share
for t in cartpole-swingup reacher-easy cheetah-run finger-spin cup-catch walker-walk; do cp /tmp/share/$t/run-00/metrics.jsonl $OUT/share/$t-metrics.jsonl; tail -n 2 /tmp/share-$t.log; done
