#!/bin/sh
# Checkpoint benchmark: strata async save stall vs torch.save and a memcpy of
# the same bytes, persist throughput vs a plain write+fsync, verified load;
# then the plot beside the JSON (bench/plot_ckpt.py). Usage:
#   [BUILD=build] [OUT=bench/out/ckpt.json] bench/ckpt_bench.sh [--gib 4] [ckpt_bench options...]
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$ROOT/build}
OUT=${OUT:-$ROOT/bench/out/ckpt.json}
cmake -S "$ROOT" -B "$BUILD" -G Ninja >/dev/null
ninja -C "$BUILD" ckpt_bench >/dev/null
mkdir -p "$(dirname "$OUT")"
echo "reproduce: BUILD=$BUILD OUT=$OUT $0 $*"
"$BUILD/bench/ckpt_bench" --out "$OUT" "$@"
/usr/bin/python3 "$ROOT/bench/plot_ckpt.py" "$OUT" "${OUT%.json}.png" ||
  echo "note: no plot (needs /usr/bin/python3 with matplotlib); the figures are in $OUT"
