#!/usr/bin/env bash
# Build what benchmarks/gpu_check.sh needs on a GPU machine that has torch but no network:
#   .devbundle/site312.zip  unzipped CPython 3.12 wheels of mujoco 3.17.0, dm_control 1.0.50,
#                           distracting-control 0.1.1rc3, dm-env, dm-tree, glfw, PyOpenGL, POT 0.9.7,
#                           trimmed to fit a 64 MiB transfer (dm_control's locomotion and dog assets,
#                           labmaze and POT's 167 MB ot.bsp extension are left out; nothing we run uses them)
#   .gl/*.deb               the libglvnd EGL/GL loaders for MuJoCo's EGL rendering
# Both folders are git-ignored. Run from the repository root on a machine with pip and apt.
set -euo pipefail
platforms="--platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64"
work=$(mktemp -d)
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp $platforms \
    -d "$work/whl" mujoco==3.17.0 dm_control==1.0.50 distracting-control==0.1.1rc3 dm-env dm-tree glfw pyopengl pot==0.9.7
mkdir -p "$work/site"
for w in "$work"/whl/*.whl; do python3 -m zipfile -e "$w" "$work/site"; done
rm -rf "$work/site/dm_control/locomotion" "$work/site/dm_control/suite/dog_assets" "$work/site"/ot/bsp/bsp_wrap*.so
cat > "$work/site/ot/bsp/__init__.py" <<'PY'
# trimmed for the device bundle: the BSP solver's 167 MB extension is not shipped
def compute_bspot_bijection(*a, **k):
    raise ImportError("ot.bsp was trimmed from this bundle")
merge_bijections = compute_bspot_bijection
PY
mkdir -p .devbundle
rm -f .devbundle/site312.zip
(cd "$work/site" && python3 -m zipfile -c "$OLDPWD/.devbundle/site312.zip" .)
mkdir -p .gl /tmp/amd64/partial
o='-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64'
apt-get $o update >/dev/null
(cd .gl && apt-get $o download libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2)
rm -rf "$work"
du -sh .devbundle .gl
