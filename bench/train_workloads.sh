#!/usr/bin/env bash
# The three MLPerf Storage training workloads through `strata bench train`, under its run rules
# (src/train/rules.h), on this machine: each dataset generated once, sized by the rules
# for the largest N asked, in a temporary directory, then read from an in-process emulated cloud
# bucket (30 ms to first byte, 25 MB/s per connection) by N = 1, 2, 4, ... emulated accelerators:
#
#   cold:  --no-cache, every epoch from the bucket, nothing written to a local cache;
#   cache: epoch 1 from the bucket while writing the local shard cache, epoch 2 from it (warm).
#
# Parameters (record size kept where the disk allows; batch and compute time scaled together so
# each accelerator asks for the published MB/s):
#   resnet50  114,660 B records, 100 per shard, batch 32, 17.92 ms (published 400, 0.224 s: / 12.5)
#   cosmoflow 2,828,486 B records, 1 per shard, batch 1, 3.5 ms (published, unscaled)
#   unet3d    9,162,539 B records (published 146,600,628 / 16), batch 7, 20.19 ms (0.323 s / 16):
#             at the published size one valid epoch (100 steps of 7 samples) is 103 GB per accelerator
#
#   bash bench/train_workloads.sh [--workload resnet50|cosmoflow|unet3d|all] [--repeat R]
#        [--build-dir DIR] [--out DIR]
#
# Prints each run, the largest valid N per workload and mode, and the commands; writes the JSON of
# every run to bench/out/workloads/. Removes every dataset it generated (also on error).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR="$ROOT/build"
OUT="$ROOT/bench/out/workloads"
WORKLOADS=(resnet50 cosmoflow unet3d)
REPEAT=1
ARGS=("$@")
while [ $# -gt 0 ]; do
  case "$1" in
    --workload) [ "$2" = all ] || WORKLOADS=("$2"); shift 2 ;;
    --repeat) REPEAT=$2; shift 2 ;;
    --build-dir) BUILD_DIR=$(realpath "$2"); shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
    *) echo "train_workloads.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
STRATA="$BUILD_DIR/src/cli/strata"
[ -x "$STRATA" ] || { echo "train_workloads.sh: build strata first (ninja -C $BUILD_DIR strata)" >&2; exit 1; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/strata-train-workloads-XXXXXX")
trap 'rm -rf "$WORK"' EXIT
trap 'exit 130' INT TERM
mkdir -p "$OUT"
EMULATE="ttfb=30ms,bw=25MB/s"

# Per workload: the scaled parameters, the loaders' budgets and the N asked.
params() {
  case "$1" in
    resnet50) echo "--samples-per-file 100 --batch 32 --compute-time 0.01792 --prefetch-bytes 64MiB --cache-ram 64MiB --accelerators 1,2,4,8" ;;
    cosmoflow) echo "--prefetch-bytes 256MiB --cache-ram 64MiB --accelerators 1,2,4,8" ;;
    unet3d) echo "--record-size 9162539 --compute-time 0.0201875 --prefetch-bytes 512MiB --cache-ram 64MiB --accelerators 1,2" ;;
    *) echo "train_workloads.sh: unknown workload $1" >&2; exit 2 ;;
  esac
}

for w in "${WORKLOADS[@]}"; do
  read -r -a P <<< "$(params "$w")"
  DATA="$WORK/$w/"
  GEN=("$STRATA" bench train --workload "$w" "${P[@]}" --generate-to "$DATA" --generate-only --shards-only)
  echo "== $w: ${GEN[*]#$BUILD_DIR/src/cli/}"
  "${GEN[@]}"
  for i in $(seq "$REPEAT"); do
    for mode in cold cache; do
      EXTRA=(--epochs 2 --cache-dir "$WORK/cache")
      [ "$mode" = cold ] && EXTRA=(--epochs 1 --no-cache)
      RUN=("$STRATA" bench train --workload "$w" "${P[@]}" --url "$DATA/shards/" --emulate "$EMULATE" --no-stop
           "${EXTRA[@]}" --label "$w $mode" --json "$OUT/$w-$mode-$i.json")
      echo "-- $w $mode, run $i: ${RUN[*]#$BUILD_DIR/src/cli/}"
      "${RUN[@]}" | grep -E "^N=|^      store|^largest|^note|^peak"
      rm -rf "$WORK/cache"
    done
  done
  rm -rf "$DATA"
done
echo
echo "reproduce: bash bench/train_workloads.sh ${ARGS[*]:-}"
