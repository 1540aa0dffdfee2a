#!/bin/bash
# The two kept finger-spin models the first two retests left out, on the same 20 start states: seed 0 at 7000 updates
# (test phase 206.6) and seed 1 at 4000 (15.2), so each seed's last four models are re-tested alike.
# out/finger-sN/run-00 held the run's config.yaml, run_info.json and the kept checkpoints/model-U.pt files, carried to the device.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD/src MUJOCO_GL=egl PYTHONUNBUFFERED=1 OMP_NUM_THREADS=4
for ru in finger-s0:7000 finger-s1:4000; do
  r=${ru%%:*}; u=${ru##*:}
  python3 -m planetrl.cli eval --run out/$r/run-00 --checkpoint $u --episodes 20 --device cuda \
    --json $OUT/$r-eval-$u.json --no-progress > $OUT/$r-eval-$u.log 2>&1 &
  pids="$pids $!"
done
wait $pids
tail -n 2 $OUT/*.log
