#!/usr/bin/env bash
# GPU checks for a CUDA machine that has torch but none of our other dependencies and no
# network. Run from the repository root:
#
#   bash benchmarks/gpu_check.sh all       # every check in one invocation, under
#                                          # ALL_LIMIT seconds (570) in all: 50 drq-preset updates eager
#                                          # vs from CUDA graphs (~30 s); the fidelity run (--preset drq,
#                                          # cartpole-swingup, 100k env steps, two seeds side by side,
#                                          # each final eval >= 667), with --graphs if that check passed (a seed whose graphs run fails restarts without);
#                                          # then, in the time left, drq_compare (our drq-preset updates
#                                          # against DrQ's), the update benchmark (eps-r and drq, plain /
#                                          # fast / graphs) and eps-r with torch.compile on top of graphs
#   bash benchmarks/gpu_check.sh fidelity  # the fidelity run alone (TRAIN_LIMIT), then the benchmark
#   bash benchmarks/gpu_check.sh graphs    # CUDA graphs: 50 updates eager vs replayed (eps-r, drq preset;
#                                          # exit 1 outside 3%/5%/10%), then the benchmark of eps-r and drq with plain,
#                                          # fast, graphs and compiled paths side by side, a 2k-step
#                                          # training smoke run with --graphs, and the drq preset's updates
#                                          # against DrQ's own, plain and fast (drq_compare) (~6 min)
#   bash benchmarks/gpu_check.sh timings   # the update benchmark of eps-r and drq (plain / fast / graphs)
#                                          # under BENCH_LIMIT (150 s): a short invocation
#   bash benchmarks/gpu_check.sh fp32      # the float32 question: two --preset drq --no-fast seeds (float32 conv
#                                          # trunk and Adam, CUDA graphs on) on cartpole-swingup to STEPS (100000)
#                                          # side by side under TRAIN_LIMIT (540 s), then drq_fidelity on them
#                                          # alone (the verdict) and beside the filed fast-path seeds FAST_RUNS
#                                          # (benchmarks/results/gpu/h200-all/fidelity): fp32.png, fp32.json
#   bash benchmarks/gpu_check.sh bench     # the update benchmark alone (all methods) + a training smoke run
#   bash benchmarks/gpu_check.sh distracted  # eps-r, drq+dbc and drq (paper preset) on cartpole-swingup with
#                                          # background + camera distractions, STEPS (100000) env steps, SEEDS each,
#                                          # PARALLEL (1) at a time (one run alone reaches 100k in one invocation, two side
#                                          # by side do not), under DISTRACTED_LIMIT seconds (570); run folders
#                                          # stay in RUNS (/tmp/gpu-distracted), so running it again on the same
#                                          # machine resumes unfinished runs (--resume); runs already filed under
#                                          # benchmarks/results/gpu/*/distracted/ up to STEPS are skipped
#   bash benchmarks/gpu_check.sh mico      # dense MICo with the torch backend (benchmarks/bench_mico_gpu.py): numpy
#                                          # vs torch on DEVICE at n = MICO_SIZES (1000,2000,4000), the numpy time
#                                          # fitted and extrapolated to MICO_TARGET (20000), then the MICO_TARGET
#                                          # solve on DEVICE certified to 1e-9 with its time and peak memory, all
#                                          # under MICO_LIMIT seconds (570): $OUT/mico.json, $OUT/mico.log; no
#                                          # rendering, no bundle needed (numpy, scipy and torch are there)
#   bash benchmarks/gpu_check.sh scene84   # the scene check at 84 px (python -m agents.metric_check, isolated,
#                                          # batch SCENE_BATCH (64), SCENE_STEPS (1500) updates, an evaluation every
#                                          # 250): ring eps-r beside ring eps-pi, then sprite eps-r beside sprite
#                                          # eps-pi, under SCENE_LIMIT seconds (540) in all, the first pair at most
#                                          # half of it; SCENE_ARGS: more flags. Each run's folder and log in
#                                          # $RES/scene84/<scene>-<method>(.log). No bundle needed: our code draws
#                                          # the scenes
#
# Knobs (for a dry run on a CPU): DEVICE (cuda), STEPS (100000), SEEDS ("0 1"), TRAIN_LIMIT (seconds,
# 400), TRAIN_ARGS (extra agents.train flags), BENCH_ARGS (extra bench_updates arguments), BENCH_LIMIT (150),
# ALL_LIMIT (570).
# The distracted stage also reads RUNS, PARALLEL, DISTRACTED_LIMIT, DISTRACTED_METHODS ("eps-r drq+dbc drq"),
# EVAL_EVERY (10000), EVAL_EPISODES (5: the filed runs' setting), CHECKPOINT_EVERY (10000), FILED (benchmarks/results/gpu) and TRAIN_ARGS.
# It expects (build them with benchmarks/make_devbundle.sh) .devbundle/site312.zip (mujoco 3.17.0,
# dm_control 1.0.50 without its locomotion assets, distracting-control, dm-env, dm-tree, glfw, PyOpenGL,
# POT 0.9.7 without ot.bsp, all for CPython 3.12, unzipped wheels) and .gl/*.deb (libglvnd EGL/GL
# loaders). What it leaves in $OUT (default ./gpu-out): the
# stage's log, $OUT/<stage>.log, written as it goes, and $OUT/results.tgz, every result file (JSON,
# figures, run folders without replay buffers or checkpoints), repacked every 20 s during training, after
# each step and on exit, so an invocation killed at its limit still leaves what it had.
set -uo pipefail
start=$(date +%s)
stage=${1:-bench}
OUT=${OUT:-$PWD/gpu-out}
RES=${RES:-/tmp/gpu-results}   # the result files, packed into $OUT/results.tgz
rm -rf "$RES"
mkdir -p "$OUT" "$RES"
pack() {  # each writer its own temporary (the 20 s packer's tar may outlive the packer), then an atomic rename
  local part
  part=$(mktemp "$OUT/.results-XXXXXX") || return
  if tar czf "$part" -C "$RES" --exclude='*/buffer' --exclude='*/checkpoint.pt' . 2>/dev/null; then
    mv "$part" "$OUT/results.tgz"
  else
    rm -f "$part"
  fi
}
trap pack EXIT
repo=$PWD
# The mico and scene84 stages render nothing with MuJoCo: they leave the bundle and the loaders alone, so
# they can run beside a training stage without rewriting the libraries that stage has loaded.
case "$stage" in mico|scene84) bundle=no ;; *) bundle=yes ;; esac
if [ "$bundle" = yes ] && ls .gl/*.deb >/dev/null 2>&1; then
  for f in .gl/*.deb; do dpkg -x "$f" /; done
  ldconfig
fi
if [ "$bundle" = yes ] && [ -f .devbundle/site312.zip ]; then
  mkdir -p /tmp/site && python3 -m zipfile -e "$repo/.devbundle/site312.zip" /tmp/site
  export PYTHONPATH=/tmp/site:$repo
else
  export PYTHONPATH=$repo
fi
export MUJOCO_GL=egl PYTHONUNBUFFERED=1
probe='from agents.dcs import make_env; e = make_env("cartpole-swingup", background=False, camera=False, fast_render=False); e.reset(); e.close(); print("render ok")'
if [ "$bundle" = yes ] && ! python3 -c "$probe" 2>"$RES/probe.err"; then
  export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
  python3 -c "$probe" 2>>"$RES/probe.err" || { echo "rendering failed"; tail -20 "$RES/probe.err"; exit 1; }
fi
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$RES/gpu.txt"
DEVICE=${DEVICE:-cuda}

fidelity() {  # $1: seconds of training allowed; both seeds side by side, then the verdict (in $RES/$FIDELITY_DIR)
  runs=$RES/${FIDELITY_DIR:-fidelity}
  rm -rf "$runs"
  mkdir -p "$runs"
  ( while sleep 20; do pack; done ) &
  packer=$!
  local t0 seed pid rc left
  local -A running=() flags=()
  t0=$(date +%s)
  echo "fidelity: training for at most $1 s, extra flags: ${TRAIN_ARGS:-none}"
  launch() {  # $1: seed, $2: seconds, $3: extra flags
    timeout "$2" python3 -m agents.train --preset drq --task cartpole-swingup \
        --env-steps "${STEPS:-100000}" --seed "$1" --eval-every 10000 --eval-episodes 10 \
        --checkpoint-every 1000000 --device "$DEVICE" --out "$runs/drq-seed$1" --no-tensorboard \
        $3 > "$runs/train-seed$1.log" 2>&1 &
    running[$1]=$!
    flags[$1]=" $3 "
  }
  for seed in ${SEEDS:-0 1}; do launch "$seed" "$1" "${TRAIN_ARGS:-}"; done
  # A seed whose --graphs run fails (not a timeout) starts again without graphs in the time left.
  while [ "${#running[@]}" -gt 0 ]; do
    sleep 2
    for seed in "${!running[@]}"; do
      pid=${running[$seed]}
      kill -0 "$pid" 2>/dev/null && continue
      wait "$pid"; rc=$?
      unset "running[$seed]"
      echo "training seed $seed (pid $pid) exited with $rc after $(( $(date +%s) - t0 )) s"
      left=$(( $1 - ($(date +%s) - t0) ))
      if [ "$rc" != 0 ] && [ "$rc" != 124 ] && [[ "${flags[$seed]}" == *" --graphs "* ]] && [ "$left" -gt 30 ]; then
        echo "seed $seed: the --graphs run failed; again without graphs for $left s (log: train-seed$seed.graphs.log)"
        tail -5 "$runs/train-seed$seed.log"
        mv "$runs/train-seed$seed.log" "$runs/train-seed$seed.graphs.log"
        rm -rf "$runs/drq-seed$seed"
        launch "$seed" "$left" "${flags[$seed]// --graphs / }"
      fi
    done
  done
  echo "training: $(( $(date +%s) - t0 )) s for both seeds side by side"
  kill $packer 2>/dev/null
  for log in "$runs"/train-seed*.log; do echo "== $log"; tail -4 "$log"; done
  pack
  python3 -m benchmarks.drq_fidelity "$runs"/drq-seed* --out "$RES/${FIDELITY_DIR:-fidelity}.png" \
      --json "$RES/${FIDELITY_DIR:-fidelity}.json"
  pack
}

bench() {  # $1: time limit (s); the rest: bench_updates arguments
  local limit=$1
  shift
  timeout "$limit" python3 -m benchmarks.bench_updates --device "$DEVICE" --rounds 5 --out "$RES/updates-cuda.json" \
      "$@" ${BENCH_ARGS:-} 2>&1
}

check_graphs() {  # $1: methods; exit status 0 when eager and replayed updates agree
  python3 -m benchmarks.bench_updates --device "$DEVICE" --check-graphs --methods "$1" \
      --out "$RES/graphs-check.json" 2>&1
}

smoke() {  # a 2k-step eps-r training run; $@: extra flags
  python3 -m agents.train --task cartpole-swingup --method eps-r --env-steps 2000 --seed-steps 100 \
      --eval-every 1000 --eval-episodes 2 --device "$DEVICE" --out "/tmp/smoke-$RANDOM" --no-tensorboard "$@" \
      2>&1 | tail -3
}

distracted() {  # $1: seconds allowed; see the usage line. Results: $RES/distracted/<method>-seed<s>/
  local runs=${RUNS:-/tmp/gpu-distracted} steps=${STEPS:-100000} width=${PARALLEL:-1} t0 name folder rc left
  local -a queue=()
  local -A running=() flags=()
  mkdir -p "$runs" "$RES/distracted"
  t0=$(date +%s)
  done_at() {  # $1: an eval.csv; true when its last evaluation is at $steps or later
    [ -f "$1" ] && [ "$(tail -n 1 "$1" | cut -d, -f1)" -ge "$steps" ] 2>/dev/null
  }
  filed() {  # $1: a run name; true when a filing of it in the repository reached $steps
    local f
    for f in "${FILED:-$repo/benchmarks/results/gpu}"/*/distracted/"$1"/eval.csv; do done_at "$f" && return 0; done
    return 1
  }
  collect() {  # the small files of every run folder into $RES (checkpoints and replay stay in $runs)
    local d
    for d in "$runs"/*/; do
      [ -d "$d" ] || continue
      mkdir -p "$RES/distracted/$(basename "$d")"
      cp -f "$d"*.csv "$d"config.json "$runs/$(basename "$d").log" "$RES/distracted/$(basename "$d")/" 2>/dev/null
    done
  }
  for seed in ${SEEDS:-0 1}; do
    for method in ${DISTRACTED_METHODS:-eps-r drq+dbc drq}; do
      name=${method//+/-}-seed$seed
      if filed "$name"; then
        echo "$name: filed in the repository up to $steps env steps; skipped"
      elif done_at "$runs/$name/eval.csv"; then
        echo "$name: finished on this machine; its files come back again"
      else
        queue+=("$method:$seed")
      fi
    done
  done
  echo "distracted: ${#queue[@]} runs to train (${queue[*]:-none}), $width at a time, for at most $1 s"
  ( while sleep 20; do collect; pack; done ) &
  local packer=$!
  launch() {  # $1: method, $2: seed, $3: extra flags, $4: the stage's seconds
    local name=${1//+/-}-seed$2 resume="" more=$3
    left=$(( $4 - ($(date +%s) - t0) ))
    [ -f "$runs/$name/checkpoint.pt" ] && resume=--resume
    [ -z "$resume" ] && rm -rf "${runs:?}/$name"
    [ -f "$runs/$name.nographs" ] && more=${more//--graphs/}
    echo "$name: ${resume:+resumed from its checkpoint, }at most $left s, flags: ${more:-none}"
    timeout "$left" python3 -m agents.train --task cartpole-swingup --method "$1" --seed "$2" \
        --env-steps "$steps" --eval-every "${EVAL_EVERY:-10000}" --eval-episodes "${EVAL_EPISODES:-5}" \
        --no-eval-train-videos --checkpoint-every "${CHECKPOINT_EVERY:-10000}" --device "$DEVICE" --out "$runs/$name" --no-tensorboard \
        --quiet $resume $more >> "$runs/$name.log" 2>&1 &
    running[$name]=$!
    flags[$name]="$1 $2 $more"
  }
  local extra=${TRAIN_ARGS:-}
  [[ "$DEVICE" == cuda* ]] && extra="--graphs $extra"
  while [ "${#queue[@]}" -gt 0 ] || [ "${#running[@]}" -gt 0 ]; do
    left=$(( $1 - ($(date +%s) - t0) ))
    while [ "${#running[@]}" -lt "$width" ] && [ "${#queue[@]}" -gt 0 ] && [ "$left" -gt 30 ]; do
      launch "${queue[0]%%:*}" "${queue[0]##*:}" "$extra" "$1"
      queue=("${queue[@]:1}")
    done
    [ "${#running[@]}" -eq 0 ] && break
    sleep 2
    for name in "${!running[@]}"; do
      kill -0 "${running[$name]}" 2>/dev/null && continue
      wait "${running[$name]}"; rc=$?
      unset "running[$name]"
      echo "$name exited with $rc after $(( $(date +%s) - t0 )) s: $(tail -n 1 "$runs/$name/eval.csv" 2>/dev/null)"
      read -r method seed rest <<< "${flags[$name]}"
      left=$(( $1 - ($(date +%s) - t0) ))
      if [ "$rc" != 0 ] && [ "$rc" != 124 ] && [[ " $rest " == *" --graphs "* ]]; then
        echo "$name: the --graphs run failed; it goes on without graphs (its log: $name.log)"
        tail -n 5 "$runs/$name.log"
        touch "$runs/$name.nographs"
        queue=("$method:$seed" "${queue[@]}")
      fi
    done
  done
  [ "${#queue[@]}" -gt 0 ] && echo "distracted: no time left for ${queue[*]}; run the stage again"
  kill $packer 2>/dev/null
  collect
  pack
}

scene84() {  # $1: seconds allowed; see the usage line. Results: $RES/scene84/<scene>-<method>/ and .log
  local t0 left pair run name pid rc
  local -a pids
  mkdir -p "$RES/scene84"
  t0=$(date +%s)
  ( while sleep 20; do pack; done ) &
  local packer=$!
  for pair in "ring:eps-r ring:eps-pi" "sprite:eps-r sprite:eps-pi"; do
    left=$(( $1 - ($(date +%s) - t0) ))
    [[ "$pair" == ring* ]] && left=$(( $1 / 2 ))
    if [ "$left" -le 30 ]; then echo "scene84: no time left for $pair"; continue; fi
    echo "scene84: $pair side by side, at most $left s each, flags: ${SCENE_ARGS:-none}"
    pids=()
    for run in $pair; do
      name=${run%%:*}-${run##*:}
      rm -rf "${RES:?}/scene84/$name"
      timeout "$left" python3 -m agents.metric_check --scene "${run%%:*}" --method "${run##*:}" --mode isolated \
          --image-size 84 --steps "${SCENE_STEPS:-1500}" --batch "${SCENE_BATCH:-64}" --eval-every 250 \
          --device "$DEVICE" --out "$RES/scene84/$name" ${SCENE_ARGS:-} > "$RES/scene84/$name.log" 2>&1 &
      pids+=("$!:$name")
    done
    for pid in "${pids[@]}"; do
      wait "${pid%%:*}"; rc=$?
      name=${pid#*:}
      if [ "$rc" = 124 ]; then  # stopped at its limit: the last progress line says how far it came
        echo "$name stopped at its limit after $(( $(date +%s) - t0 )) s: $(grep '^step' "$RES/scene84/$name.log" | tail -n 1)"
      else
        echo "$name exited with $rc after $(( $(date +%s) - t0 )) s: $(tail -n 2 "$RES/scene84/$name.log" | head -n 1)"
      fi
    done
    pack
  done
  kill $packer 2>/dev/null
  pack
}

case "$stage" in
  all)
    limit=${ALL_LIMIT:-570}
    log=$OUT/all.log
    check_graphs drq | tee "$log"
    if [ "${PIPESTATUS[0]}" = 0 ]; then TRAIN_ARGS="--graphs ${TRAIN_ARGS:-}"; else TRAIN_ARGS="--no-graphs ${TRAIN_ARGS:-}"; fi
    pack
    left=$(( limit - ($(date +%s) - start) ))
    fidelity "$(( ${TRAIN_LIMIT:-540} < left - 40 ? ${TRAIN_LIMIT:-540} : left - 40 ))" 2>&1 | tee -a "$log"
    left=$(( limit - ($(date +%s) - start) ))
    if [ "$left" -gt 150 ]; then  # the first diagnosis, should a seed miss the mark
      timeout 90 python3 -m benchmarks.drq_compare --device "$DEVICE" --updates 50 \
          --out "$RES/drq-compare.json" 2>&1 | tee -a "$log"
      pack
    fi
    left=$(( limit - ($(date +%s) - start) ))
    if [ "$left" -gt 30 ]; then
      bench "$left" --methods eps-r,drq --paths plain,fast,graphs | tee -a "$log"
      pack
    else
      echo "no time left for the update benchmark" | tee -a "$log"
    fi
    left=$(( limit - ($(date +%s) - start) ))
    if [ "$left" -gt 150 ]; then  # torch.compile on top of graphs, eps-r only (the speed target's method)
      bench "$left" --methods eps-r --paths graphs,compiled --rounds 3 --out "$RES/updates-compiled.json" \
          | tee -a "$log"
    fi
    ;;
  fidelity)
    fidelity "${TRAIN_LIMIT:-400}" 2>&1 | tee "$OUT/fidelity.log"
    bench "${BENCH_LIMIT:-150}" | tee "$OUT/bench.log"
    ;;
  graphs)
    check_graphs eps-r,drq | tee "$OUT/graphs.log"
    echo "check-graphs exit ${PIPESTATUS[0]}" | tee -a "$OUT/graphs.log"
    bench "${BENCH_LIMIT:-300}" --methods eps-r,drq --paths plain,fast,graphs,compiled | tee -a "$OUT/graphs.log"
    smoke --graphs | tee -a "$OUT/graphs.log"
    timeout 120 python3 -m benchmarks.drq_compare --device "$DEVICE" --out "$RES/drq-compare.json" 2>&1 \
        | tee -a "$OUT/graphs.log"
    ;;
  fp32)  # float32 beside the fast path: the verdict of the float32 seeds, then both sets in one figure and table
    extra="--no-fast"
    [[ "$DEVICE" == cuda* ]] && extra="$extra --graphs"  # a seed whose graphs run fails restarts without
    FIDELITY_DIR=fp32 TRAIN_ARGS="$extra ${TRAIN_ARGS:-}" fidelity "${TRAIN_LIMIT:-540}" 2>&1 | tee "$OUT/fp32.log"
    fast_runs=${FAST_RUNS:-$repo/benchmarks/results/gpu/h200-all/fidelity}
    echo "== float32 seeds beside the fast-path seeds of $fast_runs" | tee -a "$OUT/fp32.log"
    python3 -m benchmarks.drq_fidelity "$RES"/fp32/drq-seed* "$fast_runs"/drq-seed* --out "$RES/fp32-beside-fast.png" \
        --json "$RES/fp32-beside-fast.json" 2>&1 | tee -a "$OUT/fp32.log"
    pack
    ;;
  timings)  # a short separate invocation: the update benchmark of eps-r and drq, plain / fast / graphs
    bench "${BENCH_LIMIT:-150}" --methods eps-r,drq --paths plain,fast,graphs | tee "$OUT/timings.log"
    ;;
  bench)
    bench "${BENCH_LIMIT:-300}" | tee "$OUT/bench.log"
    smoke | tee -a "$OUT/bench.log"
    ;;
  mico)  # one invocation: the numpy/torch comparison and the fit first, then the large solve; mico.json is rewritten
         # after every step, so an invocation stopped at its limit still leaves what it measured
    limit=${MICO_LIMIT:-570}
    timeout "$limit" python3 -m benchmarks.bench_mico_gpu --device "$DEVICE" --sizes "${MICO_SIZES:-1000,2000,4000}" \
        --target "${MICO_TARGET:-20000}" --run-target --limit "$(( limit - 30 ))" --out "$RES/mico.json" 2>&1 \
        | tee "$OUT/mico.log"
    cp -f "$RES/mico.json" "$OUT/mico.json" 2>/dev/null
    pack
    ;;
  distracted)  # an invocation of its own; run again on the same machine, it resumes what is unfinished
    distracted "${DISTRACTED_LIMIT:-570}" 2>&1 | tee "$OUT/distracted.log"
    ;;
  scene84)  # the scene check at DCS image size, its runs two at a time
    scene84 "${SCENE_LIMIT:-540}" 2>&1 | tee "$OUT/scene84.log"
    ;;
  *)
    echo "unknown stage $stage (all, fidelity, fp32, graphs, timings, bench, distracted, mico or scene84)"
    exit 2
    ;;
esac
