#!/usr/bin/env bash
# GPU checks of issue 7, for a lent CUDA machine that has torch but none of our other
# dependencies and no network. Run from the repository root:
#
#   bash benchmarks/gpu_check.sh bench   # updates/s per method (batch 512) + a short training smoke run
#   bash benchmarks/gpu_check.sh train   # DrQ, cartpole-swingup, no distractions, 100k environment steps
#
# It expects (build them with benchmarks/make_devbundle.sh) .devbundle/site312.zip (mujoco 3.17.0, dm_control 1.0.50 without its locomotion
# assets, distracting-control, dm-env, dm-tree, glfw, PyOpenGL, POT 0.9.7 without ot.bsp, all
# for CPython 3.12, unzipped wheels) and .gl/*.deb (libglvnd EGL/GL loaders), and writes
# its results under $OUT (default ./gpu-out).
set -uo pipefail
stage=${1:-bench}
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
repo=$PWD
if ls .gl/*.deb >/dev/null 2>&1; then
  for f in .gl/*.deb; do dpkg -x "$f" /; done
  ldconfig
fi
if [ -f .devbundle/site312.zip ]; then
  mkdir -p /tmp/site && python3 -m zipfile -e "$repo/.devbundle/site312.zip" /tmp/site
  export PYTHONPATH=/tmp/site:$repo
else
  export PYTHONPATH=$repo
fi
export MUJOCO_GL=egl PYTHONUNBUFFERED=1
probe='from agents.dcs import make_env; e = make_env("cartpole-swingup", background=True, camera=True); e.reset(); e.close(); print("render ok")'
if ! python3 -c "$probe" 2>"$OUT/probe.err"; then
  export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
  python3 -c "$probe" 2>>"$OUT/probe.err" || { echo "rendering failed"; tail -20 "$OUT/probe.err"; exit 1; }
fi
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"

if [ "$stage" = bench ]; then
  python3 -m benchmarks.bench_updates --device cuda --rounds 5 --out "$OUT/updates-cuda.json" 2>&1 | tee "$OUT/bench.log"
  python3 -m agents.train --task cartpole-swingup --method eps-r --env-steps 2000 --seed-steps 100 \
      --eval-every 1000 --eval-episodes 2 --device cuda --out /tmp/smoke --no-tensorboard 2>&1 | tail -3 | tee -a "$OUT/bench.log"
  cp /tmp/smoke/eval.csv "$OUT/smoke-eval.csv" 2>/dev/null
elif [ "$stage" = train ]; then
  run=/tmp/drq-cartpole
  ( while sleep 15; do cp $run/train.csv $run/eval.csv $run/config.json "$OUT"/ 2>/dev/null; done ) &
  copier=$!
  python3 -m agents.train --task cartpole-swingup --method drq --no-background --no-camera \
      --env-steps 100000 --eval-every 10000 --eval-episodes 10 --checkpoint-every 1000000 \
      --device cuda --out $run --no-tensorboard 2>&1 | tee "$OUT/train.log"
  kill $copier 2>/dev/null
  cp $run/train.csv $run/eval.csv $run/config.json "$OUT"/
fi
