#!/bin/bash
# finger-spin seed 1's kept models at 5000, 6000 and 7000 updates (test phases 1.8, 16.6, 188.0), each re-tested
# on the same 20 start states on the GPU: are the dip and the last phase's rise the agent or five episodes' noise?
# out/finger-sN/run-00 held the run's config.yaml, run_info.json and the kept checkpoints/model-U.pt files, carried to the device.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD/src MUJOCO_GL=egl PYTHONUNBUFFERED=1 OMP_NUM_THREADS=4
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/machine.txt
for u in 5000 6000 7000; do
  python3 -m planetrl.cli eval --run out/finger-s1/run-00 --checkpoint $u --episodes 20 --device cuda \
    --json $OUT/finger-s1-eval-$u.json --no-progress > $OUT/finger-s1-eval-$u.log 2>&1 &
  pids="$pids $!"
done
wait $pids
tail -n 3 $OUT/finger-s1-eval-*.log
