#!/usr/bin/env bash
# What the loader's shard cache costs a cold epoch and gives a warm one: `strata bench train`
# over one packed dataset read through the in-process cloud emulation, each accelerator count
# run with --no-cache (every epoch cold) and with the default shard cache (epoch 1 cold,
# epochs 2 and 3 warm), alternately, RUNS times. Prints the median AU of each and the ratios:
#   cold with the cache / --no-cache   (the cache must not throttle a cold epoch)
#   warm with the cache, epochs 2, 3   (epoch 2 reads what epoch 1 admitted and admits more;
#                                       epoch 3 what the two admitted; a hit comes from the page
#                                       cache, the disk, or the store when the disk's queue is longer)
#
#   bash bench/train_cache_bench.sh [--workload unet3d] [--samples 84] [--accelerators 1,2]
#        [--runs 3] [--emulate ttfb=30ms,bw=25MB/s] [--data DIR] [--build-dir DIR]
#
# The dataset is generated once into DIR (default: a temp dir, removed at exit; give --data to
# keep it between invocations). Timing on a shared machine is noisy: the medians and ratios
# come from runs interleaved in the same invocation.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR="$ROOT/build"
WORKLOAD=unet3d
SAMPLES=84
COUNTS=1,2
RUNS=3
EMULATE=ttfb=30ms,bw=25MB/s
DATA=""
ARGS=("$@")
while [ $# -gt 0 ]; do
  case "$1" in
    --workload) WORKLOAD=$2; shift 2 ;;
    --samples) SAMPLES=$2; shift 2 ;;
    --accelerators) COUNTS=$2; shift 2 ;;
    --runs) RUNS=$2; shift 2 ;;
    --emulate) EMULATE=$2; shift 2 ;;
    --data) DATA=$2; shift 2 ;;
    --build-dir) BUILD_DIR=$(realpath "$2"); shift 2 ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "train_cache_bench.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
STRATA="$BUILD_DIR/src/cli/strata"
[ -x "$STRATA" ] || { echo "train_cache_bench.sh: $STRATA not built (ninja -C $BUILD_DIR strata)" >&2; exit 1; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/strata-train-cache-bench-XXXXXX")
trap 'rm -rf "$WORK"' EXIT
trap 'exit 130' INT TERM
if [ -z "$DATA" ]; then DATA=$WORK/data; fi
DATA=$(mkdir -p "$DATA" && cd "$DATA" && pwd)
log() { echo "[train_cache_bench] $*" >&2; }

if [ ! -f "$DATA/shards/index.json" ]; then
  log "generating $SAMPLES $WORKLOAD samples into $DATA"
  "$STRATA" bench train --workload "$WORKLOAD" --samples "$SAMPLES" --generate-to "$DATA/" --generate-only >&2
  rm -rf "$DATA/files"  # only the shards are read
fi

IFS=, read -r -a NS <<<"$COUNTS"
for n in "${NS[@]}"; do
  for r in $(seq "$RUNS"); do
    for mode in nocache cache; do
      extra=(); epochs=3
      if [ "$mode" = nocache ]; then extra=(--no-cache); epochs=1; fi
      log "N=$n run $r/$RUNS: $mode"
      "$STRATA" bench train --workload "$WORKLOAD" --url "file://$DATA/shards/" --emulate "$EMULATE" \
        --accelerators "$n" --epochs "$epochs" --no-stop --quiet "${extra[@]}" \
        --json "$WORK/n$n-$mode-$r.json" >&2
    done
  done
done

/usr/bin/python3 - "$WORK" "$COUNTS" "$RUNS" <<'EOF'
import json, statistics, sys
work, counts, runs = sys.argv[1], [int(n) for n in sys.argv[2].split(",")], int(sys.argv[3])
def au(n, mode, epoch):
    out = []
    for r in range(1, runs + 1):
        doc = json.load(open(f"{work}/n{n}-{mode}-{r}.json"))
        out += [x["au"] for x in doc["results"] if x["epoch"] == epoch and x["accelerators"] == n]
    return out
def counted(n, epoch, field):
    """Median over the cached runs of `field` summed over the ranks' sources (the shard cache's
    counters are the dataset's, shared by its ranks: the largest rank's value for those)."""
    out = []
    for r in range(1, runs + 1):
        doc = json.load(open(f"{work}/n{n}-cache-{r}.json"))
        for x in doc["results"]:
            if x["epoch"] == epoch and x["accelerators"] == n:
                values = [s.get(field, 0) for s in x["sources"]]
                out.append(max(values) if field.startswith("cache_") else sum(values))
    return statistics.median(out)
print(f"{'N':>3} {'cold --no-cache':>16} {'cold cache':>11} {'ratio':>7} {'warm 2':>7} {'hits 2':>7} "
      f"{'warm 3':>7} {'hits 3':>7} {'not admitted in epoch 1 (disk behind / no reuse)':>50}")
for n in counts:
    nc, cc, w2, w3 = au(n, "nocache", 1), au(n, "cache", 1), au(n, "cache", 2), au(n, "cache", 3)
    m_nc, m_cc, m_w2, m_w3 = (statistics.median(x) for x in (nc, cc, w2, w3))
    hits2, hits3 = counted(n, 2, "shards_from_cache"), counted(n, 3, "shards_from_cache")
    busy, no_reuse = counted(n, 1, "cache_not_admitted_busy"), counted(n, 1, "cache_not_admitted_no_reuse")
    print(f"{n:>3} {100 * m_nc:>15.1f}% {100 * m_cc:>10.1f}% {m_cc / m_nc:>7.2f} {100 * m_w2:>6.1f}% {hits2:>7.0f} "
          f"{100 * m_w3:>6.1f}% {hits3:>7.0f} {busy:>42.0f} / {no_reuse:.0f}")
    print(f"    runs (AU %): no-cache {[round(100 * x, 1) for x in nc]}, cache cold {[round(100 * x, 1) for x in cc]}, "
          f"epoch 2 {[round(100 * x, 1) for x in w2]}, epoch 3 {[round(100 * x, 1) for x in w3]}")
    def per_epoch(field, epoch):
        """Median over the cached runs of the cache's counter `field` gained in `epoch` (it counts since
        the cache opened)."""
        out = []
        for r in range(1, runs + 1):
            doc = json.load(open(f"{work}/n{n}-cache-{r}.json"))
            at = {x["epoch"]: max(s.get(field, 0) for s in x["sources"])
                  for x in doc["results"] if x["accelerators"] == n}
            out.append(at[epoch] - at[epoch - 1])
        return statistics.median(out)
    print(f"    disk hits from the page cache: epoch 2 {per_epoch('cache_disk_hits_resident', 2):.0f}, "
          f"epoch 3 {per_epoch('cache_disk_hits_resident', 3):.0f}; hits fetched from the store instead "
          f"(sooner than the disk's queue): epoch 2 {per_epoch('cache_store_instead_of_disk', 2):.0f}, "
          f"epoch 3 {per_epoch('cache_store_instead_of_disk', 3):.0f}")
EOF
echo "command: bash bench/train_cache_bench.sh ${ARGS[*]}"
