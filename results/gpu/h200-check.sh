#!/bin/bash
# One device session: CUDA tests at this commit, the cpu preset's step and plan timings, and a short cpu-preset loop on cuda.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD/src MUJOCO_GL=egl PYTHONUNBUFFERED=1
git log -1 --format=%H 2>/dev/null | tee $OUT/commit.txt
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee $OUT/machine.txt
python3 -c "import torch,sys,mujoco;print(torch.__version__, torch.version.cuda, sys.version.split()[0], mujoco.__version__)" | tee -a $OUT/machine.txt
nproc | tee -a $OUT/machine.txt
python3 -m pytest -p no:cacheprovider tests/training/test_cuda.py -q -rs 2>&1 | tee $OUT/test_cuda.log
cd benchmarks
python3 train_step.py --device cuda --preset cpu --batch 8 --length 32 --modes fp32,bf16 --steps 20 2>&1 | tee $OUT/speed.jsonl
python3 cem_speed.py --device cuda --envs 1,4 --modes eager,bf16 --repeats 10 2>&1 | tee -a $OUT/speed.jsonl
python3 train_step.py --device cuda --preset paper --modes fp32 --steps 10 2>&1 | tee -a $OUT/speed.jsonl
cd ..
timeout -s INT 170 python3 -m planetrl.cli train --preset cpu --task cheetah-run --set run.device=cuda --logdir /tmp/gpurun --no-progress 2>&1 | tail -15
cp /tmp/gpurun/run-00/metrics.jsonl $OUT/cpu-cheetah-cuda-metrics.jsonl; cp /tmp/gpurun/run-00/run_info.json $OUT/cpu-cheetah-cuda-run_info.json
