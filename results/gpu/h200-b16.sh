#!/bin/bash
# One device session at this commit: the CUDA tests, and the price of batch 16 on a GPU (bare update, and the cpu preset's loop).
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD/src MUJOCO_GL=egl PYTHONUNBUFFERED=1
git log -1 --format=%H 2>/dev/null | tee $OUT/commit.txt
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee $OUT/machine.txt
python3 -c "import torch,sys,mujoco;print(torch.__version__, torch.version.cuda, sys.version.split()[0], mujoco.__version__)" | tee -a $OUT/machine.txt
python3 -m pytest -p no:cacheprovider tests/training/test_cuda.py -q -rs 2>&1 | tee $OUT/test_cuda.log
cd benchmarks
for b in 8 16; do python3 train_step.py --device cuda --preset cpu --batch $b --length 32 --modes fp32,bf16 --steps 20 2>&1 | tee -a $OUT/speed.jsonl; done
cd ..
export OMP_NUM_THREADS=2
for b in 8 16; do
  timeout -s INT 170 python3 -m planetrl.cli train --preset cpu --task cheetah-run --set run.device=cuda --set data.batch_size=$b --logdir /tmp/loop-b$b --no-progress > /tmp/loop-b$b.log 2>&1 &
  pids="$pids $!"
done
wait $pids
for b in 8 16; do tail -n 3 /tmp/loop-b$b.log; cp /tmp/loop-b$b/run-00/metrics.jsonl $OUT/loop-b$b-metrics.jsonl; done
