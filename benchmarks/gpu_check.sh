#!/usr/bin/env bash
# GPU checks for a lent CUDA machine that has torch but none of our other dependencies and no
# network. Run from the repository root:
#
#   bash benchmarks/gpu_check.sh fidelity  # issue 12: --preset drq on cartpole-swingup, 100k env steps,
#                                          # two seeds side by side (verdict: each final eval >= 667),
#                                          # then the update benchmark, plain and fast paths (~8 min)
#   bash benchmarks/gpu_check.sh bench     # the update benchmark alone + a short training smoke run
#
# Knobs (for a dry run on a CPU): DEVICE (cuda), STEPS (100000), SEEDS ("0 1"), TRAIN_LIMIT (seconds,
# 400), TRAIN_ARGS (extra agents.train flags), BENCH_ARGS (extra bench_updates arguments), BENCH_LIMIT (150).
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
probe='from agents.dcs import make_env; e = make_env("cartpole-swingup", background=False, camera=False, fast_render=False); e.reset(); e.close(); print("render ok")'
if ! python3 -c "$probe" 2>"$OUT/probe.err"; then
  export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
  python3 -c "$probe" 2>>"$OUT/probe.err" || { echo "rendering failed"; tail -20 "$OUT/probe.err"; exit 1; }
fi
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
DEVICE=${DEVICE:-cuda}

if [ "$stage" = bench ]; then
  python3 -m benchmarks.bench_updates --device "$DEVICE" --rounds 5 --out "$OUT/updates-cuda.json" ${BENCH_ARGS:-} 2>&1 \
      | tee "$OUT/bench.log"
  python3 -m agents.train --task cartpole-swingup --method eps-r --env-steps 2000 --seed-steps 100 \
      --eval-every 1000 --eval-episodes 2 --device "$DEVICE" --out /tmp/smoke --no-tensorboard 2>&1 | tail -3 \
      | tee -a "$OUT/bench.log"
elif [ "$stage" = fidelity ]; then
  runs=/tmp/fidelity
  rm -rf "$runs"
  mkdir -p "$runs"
  pack() {  # the runs' logs and CSVs as one file (the device tool brings back at most 8 files)
    tar czf "$OUT/runs.tgz.part" -C "$runs" --exclude='*/buffer' --exclude='*/checkpoint.pt' . 2>/dev/null \
      && mv "$OUT/runs.tgz.part" "$OUT/runs.tgz"
  }
  ( while sleep 20; do pack; done ) &
  packer=$!
  start=$(date +%s)
  pids=""
  for seed in ${SEEDS:-0 1}; do
    timeout "${TRAIN_LIMIT:-400}" python3 -m agents.train --preset drq --task cartpole-swingup \
        --env-steps "${STEPS:-100000}" --seed "$seed" --eval-every 10000 --eval-episodes 10 \
        --checkpoint-every 1000000 --device "$DEVICE" --out "$runs/drq-seed$seed" --no-tensorboard \
        > "$runs/train-seed$seed.log" 2>&1 &
    pids="$pids $!"
  done
  for pid in $pids; do wait "$pid"; echo "training process $pid exited with $?"; done
  echo "training: $(( $(date +%s) - start )) s for both seeds side by side"
  kill $packer 2>/dev/null
  for log in "$runs"/train-seed*.log; do echo "== $log"; tail -4 "$log"; done
  pack
  python3 -m benchmarks.drq_fidelity "$runs"/drq-seed* --out "$OUT/fidelity.png" --json "$OUT/fidelity.json"
  timeout "${BENCH_LIMIT:-150}" python3 -m benchmarks.bench_updates --device "$DEVICE" --rounds 5 \
      --out "$OUT/updates-cuda.json" ${BENCH_ARGS:-} 2>&1 | tee "$OUT/bench.log"
fi
