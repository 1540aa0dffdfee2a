#!/bin/bash
# One device session: the CUDA tests (a killed CUDA run with optim.average resumes and evaluates), the price of
# optim.average on a GPU update, and cheetah-run seed 1's averaged models at 4000-7000 updates re-tested on the
# same 20 start states. out-gpu/cheetah-avg-s1/run-00 held the run's config.yaml, run_info.json and kept
# checkpoints/model-U.pt files, carried to the device (the run: results/cpu/cheetah-run/seed-1).
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD/src MUJOCO_GL=egl PYTHONUNBUFFERED=1
echo "$COMMIT" > $OUT/machine.txt
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee -a $OUT/machine.txt
python3 -c "import torch,sys,mujoco;print(torch.__version__, torch.version.cuda, sys.version.split()[0], mujoco.__version__)" | tee -a $OUT/machine.txt
python3 -m pytest -p no:cacheprovider tests/training/test_cuda.py -q -rs 2>&1 | tee $OUT/test_cuda.log
cd benchmarks
for rep in 1 2; do for a in 0 0.99; do
  python3 train_step.py --device cuda --preset cpu --batch 8 --length 32 --modes fp32,bf16 --steps 30 --set optim.average=$a 2>&1 | tee -a $OUT/speed.jsonl
done; done
cd ..
export OMP_NUM_THREADS=4
for u in 4000 5000 6000 7000; do
  timeout -s INT 330 python3 -m planetrl.cli eval --run out-gpu/cheetah-avg-s1/run-00 --checkpoint $u --episodes 20 --device cuda \
    --json $OUT/cheetah-s1-avg-eval-$u.json --no-progress > /tmp/eval-$u.log 2>&1 &
  pids="$pids $!"
done
wait $pids
tail -n 2 /tmp/eval-*.log
