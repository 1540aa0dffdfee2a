#!/bin/bash
# make-carry.sh: build .whl/ and .gl/ in the repository root, which the h200-*.sh device scripts install from
# (the card's image has torch but not MuJoCo, dm-control or gymnasium, and no package index). Run here, not there.
# dm-control and MuJoCo are repacked without dm_control/locomotion, dm_control/suite/dog_assets and
# mujoco/experimental, which no planetrl task loads, so wheels and kept models fit in what a call may carry.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
python=${PYTHON:-.venv/bin/python}
rm -rf .whl && mkdir -p .whl .gl /tmp/amd64/partial
$python -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_24_x86_64 \
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d .whl \
  mujoco==3.17.0 dm-control==1.0.50 gymnasium==1.4.0 dm-env dm-tree glfw pyopengl farama-notifications websockets
$python - <<'PY'
import pathlib
import zipfile

UNUSED = ("dm_control/locomotion/", "dm_control/suite/dog_assets/", "mujoco/experimental/")
for wheel in [*pathlib.Path(".whl").glob("dm_control-*.whl"), *pathlib.Path(".whl").glob("mujoco-*.whl")]:
    slim = wheel.with_suffix(".slim")
    with zipfile.ZipFile(wheel) as source, zipfile.ZipFile(slim, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            if info.filename.startswith(UNUSED):
                continue
            data = source.read(info.filename)
            if info.filename.endswith(".dist-info/RECORD"):
                data = b"\n".join(line for line in data.split(b"\n") if not line.startswith(tuple(u.encode() for u in UNUSED)))
            target.writestr(info, data)
    slim.replace(wheel)
PY
apt_opts=(-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64)
apt-get "${apt_opts[@]}" update -qq
(cd .gl && apt-get "${apt_opts[@]}" download -qq libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2)
grep -qx '/.whl/' .git/info/exclude 2>/dev/null || printf '/.whl/\n/.gl/\n/out-gpu/\n' >> .git/info/exclude
du -sh .whl .gl
