#!/usr/bin/env bash
# Accelerator utilisation (AU) with emulated accelerators, MLPerf Storage / DLIO style, in one
# run, for these data paths over the same samples:
#
#   (a) strata's streaming loader over packed shards read from an emulated cloud bucket
#       (`strata bench train`): epoch 1 cold, epoch 2 from its local shard cache; and the same
#       again with buffer reuse off (STRATA_BUFFER_POOL_MIB=0), which shows what recycling
#       memory is worth on this machine (skip it with --skip-fresh-buffers);
#   (b) PyTorch DataLoader (bench/train_baseline.py) reading one file per sample from a local
#       directory (already in the page cache: the baseline's best case);
#   (c) the same DataLoader over an s3fs mount (use_cache on, as a user would) of the same bucket.
#
# The bucket: file:// data -> `strata serve` (no cache: a plain S3 front) -> nginx cloud proxy
# (scripts/cloud-proxy.sh: TTFB per request, rate cap per connection, as a cloud bucket does).
# The individual files and the shards live in the same bucket (files/ and shards/).
#
# Workload (default): ResNet-50's published records (114,660 B TFRecord), batch and compute time
# scaled by 1/12.5 (batch 32, 0.224 s / 12.5 = 17.9 ms on an H100), so each accelerator asks for
# the same MiB/s as the real one; samples per shard scaled the same way (1251 -> 100).
# Each path sweeps N = 1,2,4,8,... until AU drops below the threshold (at least up to --min-n).
#
# Run rules (those of `strata bench train`, src/train/rules.h): each epoch is timed from
# empty loader queues and must last >= 100 steps and >= 2 s; a cold epoch's dataset must be >= 5 x
# the loaders' memory (prefetch budgets + RAM cache; --prefetch-bytes and --cache-ram set strata's).
# Without --samples the dataset is what the rules need at --max (strata sizes it, generated once
# for every path); the s3fs path reads at each N only the files the rules need there (it is slow).
# Only valid results count toward the largest N; --quick is a smoke run whose figures are not valid.
#
#   bash bench/train_bench.sh [--quick] [--samples N] [--workload resnet50|cosmoflow|unet3d]
#        [--accelerator h100|a100] [--scale F] [--workers W] [--max N] [--min-n N]
#        [--prefetch-bytes 64MiB] [--cache-ram 64MiB]
#        [--ttfb-ms MS] [--rate 25m] [--skip-s3fs] [--skip-fresh-buffers] [--build-dir DIR]
#
# Writes bench/out/train.json and bench/out/train.png, prints the table and the command that
# reproduces it. Every process it starts (strata serve, nginx, s3fs) is stopped by PID on exit.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR="$ROOT/build"
WORKLOAD=resnet50
ACCEL=h100
SCALE=12.5
SAMPLES=""
WORKERS=4
MAX=8
MIN_N=2
PREFETCH=64MiB
RAM_CACHE=64MiB
EPOCHS=2
TTFB_MS=30
RATE=25m
SKIP_S3FS=0
SKIP_FRESH=0
QUICK=0
ARGS=("$@")
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) QUICK=1; shift ;;
    --samples) SAMPLES=$2; shift 2 ;;
    --workload) WORKLOAD=$2; shift 2 ;;
    --accelerator) ACCEL=$2; shift 2 ;;
    --scale) SCALE=$2; shift 2 ;;
    --workers) WORKERS=$2; shift 2 ;;
    --max) MAX=$2; shift 2 ;;
    --min-n) MIN_N=$2; shift 2 ;;
    --prefetch-bytes) PREFETCH=$2; shift 2 ;;
    --cache-ram) RAM_CACHE=$2; shift 2 ;;
    --ttfb-ms) TTFB_MS=$2; shift 2 ;;
    --rate) RATE=$2; shift 2 ;;
    --skip-s3fs) SKIP_S3FS=1; shift ;;
    --skip-fresh-buffers) SKIP_FRESH=1; shift ;;
    --build-dir) BUILD_DIR=$(realpath "$2"); shift 2 ;;
    -h|--help) sed -n '2,35p' "$0"; exit 0 ;;
    *) echo "train_bench.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
PY=/usr/bin/python3
STRATA="$BUILD_DIR/src/cli/strata"
if [ ! -x "$STRATA" ]; then
  echo "building strata in $BUILD_DIR ..." >&2
  [ -f "$BUILD_DIR/build.ninja" ] || cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja >&2
  ninja -C "$BUILD_DIR" strata >&2
fi
for tool in nginx s3fs fusermount3 $PY; do
  command -v "$tool" >/dev/null || { echo "train_bench.sh: $tool not found: run scripts/setup.sh" >&2; exit 1; }
done
[ "$SKIP_S3FS" = 1 ] || [ "$(id -u)" = 0 ] || { echo "train_bench.sh: s3fs needs root here (or --skip-s3fs)" >&2; exit 2; }

# The workload's published parameters (mlcommons/storage), scaled: record size kept, batch,
# samples per shard and compute time divided by SCALE.
read -r RECORD PER_FILE BATCH0 COMPUTE0 EXT DEFAULT_SAMPLES < <($PY - "$WORKLOAD" "$ACCEL" <<'EOF'
import sys
w, a = sys.argv[1], sys.argv[2]
table = {  # record bytes, samples per file, batch, compute h100, compute a100, ext, default samples
    "resnet50": (114660, 1251, 400, 0.224, 0.435, "jpg", 4096),
    "cosmoflow": (2828486, 1, 1, 0.0035, 0.00551, "bin", 512),
    "unet3d": (146600628, 1, 7, 0.323, 0.636, "npz", 28),
}
if w not in table or a not in ("h100", "a100"):
    sys.exit("train_bench.sh: --workload resnet50|cosmoflow|unet3d, --accelerator h100|a100")
r, k, b, h, c, e, s = table[w]
print(r, k, b, h if a == "h100" else c, e, s)
EOF
)
[ -n "${RECORD:-}" ] || exit 2
read -r BATCH PER_SHARD COMPUTE < <($PY -c "
import sys
s = float('$SCALE'); b = max(1, round($BATCH0 / s)); k = max(1, round($PER_FILE / s))
c = float(f'{$COMPUTE0 * b / $BATCH0:.6g}')  # 6 significant digits, written without an exponent
print(b, k, f'{c:.12f}'.rstrip('0').rstrip('.'))")
[ -z "$SAMPLES" ] && [ "$QUICK" = 1 ] && SAMPLES=$((DEFAULT_SAMPLES / 4))
[ "$QUICK" = 1 ] && MAX=$(( MAX < 4 ? MAX : 4 )) && MIN_N=$(( MIN_N < 2 ? MIN_N : 2 ))
SMOKE=(); [ "$QUICK" = 1 ] && SMOKE=(--quick)
THRESHOLD=$($PY -c "print({'resnet50': 90, 'unet3d': 90, 'cosmoflow': 70}['$WORKLOAD'])")

WORK=$(mktemp -d "${TMPDIR:-/tmp}/strata-train-bench-XXXXXX")
DATA=$WORK/root            # the gateway's backend: each top-level directory is a bucket
MNT=$WORK/mnt
PIDS=()
S3FS_PID=""
cleanup() {
  if [ -n "$S3FS_PID" ]; then
    mountpoint -q "$MNT" 2>/dev/null && { fusermount3 -u "$MNT" 2>/dev/null || fusermount3 -u -z "$MNT" 2>/dev/null || true; }
    kill "$S3FS_PID" 2>/dev/null || true
    wait "$S3FS_PID" 2>/dev/null || true
  fi
  bash "$ROOT/scripts/cloud-proxy.sh" stop "$WORK/proxy" >/dev/null 2>&1 || true
  for pid in "${PIDS[@]:-}"; do [ -n "$pid" ] && kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]:-}"; do [ -n "$pid" ] && wait "$pid" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
OUT="$ROOT/bench/out"
mkdir -p "$OUT" "$DATA/bench" "$MNT"
unset AWS_CA_BUNDLE SSL_CERT_FILE REQUESTS_CA_BUNDLE CURL_CA_BUNDLE SSL_CERT_DIR || true
export NO_PROXY="127.0.0.1,localhost" no_proxy="127.0.0.1,localhost"
AK=trainbenchkey
SK=trainbenchsecret0123456789
free_port() { $PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
log() { echo "[train_bench] $*" >&2; }

log "workload $WORKLOAD ($ACCEL), scaled 1/$SCALE: ${SAMPLES:-rule-sized} samples of $RECORD B, $PER_SHARD per shard, batch $BATCH, compute ${COMPUTE}s, AU threshold $THRESHOLD%"
COMMON=(--workload "$WORKLOAD" --accelerator "$ACCEL" --batch "$BATCH" --compute-time "$COMPUTE"
        --prefetch-bytes "$PREFETCH" --cache-ram "$RAM_CACHE" "${SMOKE[@]}")
SIZE=(); [ -n "$SAMPLES" ] && SIZE=(--samples "$SAMPLES")
"$STRATA" bench train "${COMMON[@]}" "${SIZE[@]}" --record-size "$RECORD" --samples-per-file "$PER_SHARD" \
  --max-accelerators "$MAX" --generate-to "$DATA/bench/" --generate-only
SAMPLES=$($PY -c "import json; print(json.load(open('$DATA/bench/bench-train.json'))['samples'])")

# ---- the emulated cloud bucket ----
"$STRATA" serve --backend "file://$DATA" --listen 127.0.0.1:0 --access-key $AK --secret-key $SK \
  --cache-ram 0 --metadata-ttl 0s --workers 64 > "$WORK/serve.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 300); do grep -q "listening on" "$WORK/serve.log" && break; sleep 0.1; done
GW=$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$WORK/serve.log" | head -1)
[ -n "$GW" ] || { cat "$WORK/serve.log" >&2; exit 1; }
PPORT=$(free_port)
bash "$ROOT/scripts/cloud-proxy.sh" start "$WORK/proxy" "$PPORT" "$GW" --ttfb-ms "$TTFB_MS" --rate "$RATE" >/dev/null
EP=http://127.0.0.1:$PPORT
log "bucket: $GW behind the cloud proxy $EP (ttfb ${TTFB_MS} ms, $RATE/s per connection)"

# ---- (a) strata's loader over the shards in the bucket ----
SWEEP=(--max-accelerators "$MAX" --min-accelerators "$MIN_N" --epochs "$EPOCHS" --threshold "$THRESHOLD")
AWS_ACCESS_KEY_ID=$AK AWS_SECRET_ACCESS_KEY=$SK "$STRATA" bench train "${COMMON[@]}" "${SWEEP[@]}" \
  --url "s3://bench/shards/?endpoint=$EP&region=us-east-1&path_style=1" --cache-dir "$WORK/cache" \
  --label "strata loader, shards from the cloud bucket" --json "$WORK/strata.json"

BASE=(--batch "$BATCH" --compute-time "$COMPUTE" --record-size "$RECORD" --ext "$EXT" --epochs "$EPOCHS"
      --max "$MAX" --min-n "$MIN_N" --threshold "$($PY -c "print($THRESHOLD / 100)")" --workers "$WORKERS"
      "${SMOKE[@]}")
# ---- (b) PyTorch DataLoader over the same samples as local files (the page cache: never cold) ----
$PY "$ROOT/bench/train_baseline.py" --dir "$DATA/bench/files" "${BASE[@]}" --cold-epochs none \
  --label "PyTorch DataLoader, local files" --json "$WORK/local.json"

INPUTS=("$WORK/strata.json" "$WORK/local.json")
# ---- (a') strata again, every buffer freshly mapped (its own cold cache) ----
if [ "$SKIP_FRESH" = 0 ]; then
  STRATA_BUFFER_POOL_MIB=0 AWS_ACCESS_KEY_ID=$AK AWS_SECRET_ACCESS_KEY=$SK "$STRATA" bench train "${COMMON[@]}" \
    "${SWEEP[@]}" --url "s3://bench/shards/?endpoint=$EP&region=us-east-1&path_style=1" \
    --cache-dir "$WORK/cache-fresh" --label "strata loader, no buffer reuse" --json "$WORK/strata-fresh.json"
  INPUTS+=("$WORK/strata-fresh.json")
fi
# ---- (c) the same over an s3fs mount of the bucket ----
if [ "$SKIP_S3FS" = 0 ]; then
  echo "$AK:$SK" > "$WORK/s3fs.passwd"; chmod 600 "$WORK/s3fs.passwd"
  mkdir -p "$WORK/s3fs-cache"
  s3fs bench "$MNT" -f -o "ro,url=$EP,use_path_request_style,sigv4,endpoint=us-east-1,passwd_file=$WORK/s3fs.passwd,use_cache=$WORK/s3fs-cache,stat_cache_expire=600,dbglevel=warn,parallel_count=8,multireq_max=20" \
    > "$WORK/s3fs.log" 2>&1 &
  S3FS_PID=$!
  for _ in $(seq 200); do grep -q " $MNT fuse" /proc/self/mounts && break; kill -0 "$S3FS_PID" 2>/dev/null || break; sleep 0.05; done
  grep -q " $MNT fuse" /proc/self/mounts || { echo "s3fs did not mount:" >&2; tail -20 "$WORK/s3fs.log" >&2; exit 1; }
  $PY "$ROOT/bench/train_baseline.py" --dir "$MNT/files" "${BASE[@]}" --cold-epochs first --rule-sized \
    --label "PyTorch DataLoader, s3fs mount of the bucket" --json "$WORK/s3fs.json"
  INPUTS+=("$WORK/s3fs.json")
fi

# ---- report ----
REPRO="bash bench/train_bench.sh ${ARGS[*]:-}"
CONFIG=$($PY -c "
import json
print(json.dumps({'workload': '$WORKLOAD', 'accelerator': '$ACCEL', 'scale': $SCALE, 'samples': $SAMPLES,
                  'record_size': $RECORD, 'samples_per_shard': $PER_SHARD, 'batch': $BATCH,
                  'compute_time_s': $COMPUTE, 'threshold_pct': $THRESHOLD, 'epochs': $EPOCHS,
                  'prefetch_bytes': '$PREFETCH', 'ram_cache': '$RAM_CACHE', 'quick': bool($QUICK),
                  'dataloader_workers_per_accelerator': $WORKERS, 'cloud_ttfb_ms': $TTFB_MS,
                  'cloud_rate_per_connection': '$RATE', 'cores': $(nproc)}))")
echo
$PY "$ROOT/bench/plot_train.py" --config "$CONFIG" --command "$REPRO" \
  --out-json "$OUT/train.json" --out-png "$OUT/train.png" "${INPUTS[@]}" || {
  rc=$?; [ "$rc" = 3 ] && echo "(no plot: matplotlib missing for $PY)" || exit "$rc"; }
echo
echo "reproduce: $REPRO"
