#!/usr/bin/env bash
# Install the Debian packages planetrl needs (headless EGL rendering for MuJoCo,
# the venv module) when they are missing. As root it installs them; otherwise
# it prints the exact apt-get line and fails.
set -euo pipefail
packages=(libegl1 libegl-mesa0 libgl1 libgl1-mesa-dri libopengl0)
if ! python3 -c "import ensurepip, venv" >/dev/null 2>&1; then
  packages+=(python3-venv)
fi
if ! command -v dpkg-query >/dev/null 2>&1; then
  echo "debian-packages: not a Debian system; make sure EGL/Mesa libraries are installed" >&2
  exit 0
fi
missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0
line="apt-get update && apt-get install -y --no-install-recommends ${missing[*]}"
if [[ $(id -u) -eq 0 ]]; then
  echo "debian-packages: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "debian-packages: missing ${missing[*]}. Run as root:" >&2
  echo "  $line" >&2
  exit 1
fi
