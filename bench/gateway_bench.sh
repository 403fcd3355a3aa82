#!/usr/bin/env bash
# The gateway benchmark, in one run on loopback:
#   - raw loopback TCP throughput (iperf3, 1 and 16 streams): the baseline;
#   - warm GET throughput of one large object (default 1 GiB) with 1 and 16 concurrent
#     clients, and the small-object GET rate (100 KiB objects, 64 concurrent clients), against
#       * strata serve (file:// backend, RAM cache warmed by one pass),
#       * Ceph RGW directly (memstore OSD), and
#       * s3rver directly;
#   - each large-object figure as a fraction of iperf3 with the same number of streams;
#   - PUT throughput (boto3, bench/gateway_put_bench.py): --put-clients concurrent uploads of a
#     --put-mib object, as single PUTs and as multipart uploads (32 MiB parts), against strata serve
#     (a fresh one with default limits, so its peak RSS (VmHWM, reset before each phase) is that of
#     the uploads alone) and RGW directly.
# The load client is C++ (build/bench/gateway_bench: raw HTTP/1.1 keep-alive sockets,
# SigV4 from src/net, bodies discarded), so the client is the same for every server.
# Writes bench/out/gateway.json and prints the command to reproduce it.
#
#   bash bench/gateway_bench.sh [--size-mib N] [--small-kib N] [--small-count N]
#        [--small-clients N] [--seconds S] [--put-mib N] [--put-clients N] [--skip-put]
#        [--skip-rgw] [--skip-s3rver] [--build-dir DIR]
#
# Every process it starts (strata serve, iperf3, RGW's daemons, s3rver) is stopped by PID on exit.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR="$ROOT/build"
SIZE_MIB=1024
SMALL_KIB=100
SMALL_COUNT=256
SMALL_CLIENTS=64
SECONDS_SMALL=10
SKIP_RGW=0
SKIP_S3RVER=0
PUT_MIB=256
PUT_CLIENTS=4
SKIP_PUT=0
ARGS=("$@")
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) BUILD_DIR=$(realpath "$2"); shift 2 ;;
    --size-mib) SIZE_MIB=$2; shift 2 ;;
    --small-kib) SMALL_KIB=$2; shift 2 ;;
    --small-count) SMALL_COUNT=$2; shift 2 ;;
    --small-clients) SMALL_CLIENTS=$2; shift 2 ;;
    --seconds) SECONDS_SMALL=$2; shift 2 ;;
    --put-mib) PUT_MIB=$2; shift 2 ;;
    --put-clients) PUT_CLIENTS=$2; shift 2 ;;
    --skip-put) SKIP_PUT=1; shift ;;
    --skip-rgw) SKIP_RGW=1; shift ;;
    --skip-s3rver) SKIP_S3RVER=1; shift ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) echo "gateway_bench.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

BENCH="$BUILD_DIR/bench/gateway_bench"
STRATA="$BUILD_DIR/src/cli/strata"
if [ ! -x "$BENCH" ] || [ ! -x "$STRATA" ]; then
  echo "building strata and gateway_bench in $BUILD_DIR ..." >&2
  [ -f "$BUILD_DIR/build.ninja" ] || cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release >&2
  ninja -C "$BUILD_DIR" strata gateway_bench >&2
fi
for tool in iperf3 /usr/bin/aws /usr/bin/python3; do
  command -v "$tool" >/dev/null || { echo "gateway_bench.sh: $tool not found: run scripts/setup.sh" >&2; exit 1; }
done

WORK=$(mktemp -d "${TMPDIR:-/tmp}/strata-gateway-bench-XXXXXX")
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  bash "$ROOT/scripts/rgw.sh" stop "$WORK/rgw" >/dev/null 2>&1 || true
  bash "$ROOT/scripts/s3rver.sh" stop "$WORK/s3rver" >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT
OUT="$ROOT/bench/out"
mkdir -p "$OUT" "$WORK/results"
free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
log() { echo "[gateway_bench] $*" >&2; }

# ---- baseline: loopback TCP ----
iperf() {  # iperf STREAMS -> bytes/s received
  local port; port=$(free_port)
  local out="$WORK/iperf-server-$1.out"
  # Bound to loopback only (iperf3 -s listens on every address by default); started once it says
  # it listens, not after a guessed sleep.
  iperf3 -s -1 -B 127.0.0.1 -p "$port" --forceflush >"$out" 2>&1 &
  local pid=$!
  PIDS+=("$pid")
  for _ in $(seq 1 300); do grep -q "Server listening" "$out" && break; sleep 0.1; done
  grep -q "Server listening" "$out" || { cat "$out" >&2; exit 1; }
  iperf3 -c 127.0.0.1 -p "$port" -t 4 -P "$1" -J >"$WORK/iperf-$1.json"
  wait "$pid" 2>/dev/null || true
  /usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["end"]["sum_received"]["bits_per_second"]/8)' "$WORK/iperf-$1.json"
}
log "iperf3 loopback, 1 and 16 streams"
TCP1=$(iperf 1)
TCP16=$(iperf 16)

# ---- data ----
log "making a ${SIZE_MIB} MiB object and ${SMALL_COUNT} x ${SMALL_KIB} KiB objects"
mkdir -p "$WORK/data/bench/small"
head -c "$((SIZE_MIB << 20))" /dev/urandom >"$WORK/data/bench/large.bin"
for i in $(seq 1 "$SMALL_COUNT"); do head -c "$((SMALL_KIB << 10))" /dev/urandom >"$WORK/data/bench/small/$i"; done
SMALL_KEYS=$(seq -s, -f 'small/%g' 1 "$SMALL_COUNT")
head -c "$((PUT_MIB << 20))" /dev/urandom >"$WORK/put.bin"

# run_puts NAME ENDPOINT BUCKET AK SK [PID]: single and multipart PUT throughput
# (and PID's peak RSS during each).
run_puts() {
  local name=$1 ep=$2 bucket=$3 ak=$4 sk=$5 pid=${6:-}
  [ "$SKIP_PUT" = 1 ] && return 0
  local common=(--endpoint "$ep" --bucket "$bucket" --access-key "$ak" --secret-key "$sk" --file "$WORK/put.bin"
                --clients "$PUT_CLIENTS" ${pid:+--pid "$pid"})
  for mode in single multipart; do
    log "$name: ${PUT_CLIENTS} x ${PUT_MIB} MiB $mode PUTs"
    env -u AWS_CA_BUNDLE AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null \
      /usr/bin/python3 "$ROOT/bench/gateway_put_bench.py" "${common[@]}" --mode "$mode" >"$WORK/results/$name-put-$mode.json"
  done
}

# run_target NAME ENDPOINT BUCKET AK SK: warm pass, then the three measurements.
run_target() {
  local name=$1 ep=$2 bucket=$3 ak=$4 sk=$5
  local common=(--endpoint "$ep" --bucket "$bucket" --access-key "$ak" --secret-key "$sk")
  log "$name: warm-up pass"
  "$BENCH" "${common[@]}" --keys large.bin --clients 1 --requests-per-client 1 >"$WORK/results/$name-warmup.json"
  "$BENCH" "${common[@]}" --keys "$SMALL_KEYS" --clients 8 --requests-per-client "$(( (SMALL_COUNT + 7) / 8 ))" >/dev/null
  log "$name: large object, 1 client"
  "$BENCH" "${common[@]}" --keys large.bin --clients 1 --requests-per-client 2 >"$WORK/results/$name-large1.json"
  log "$name: large object, 16 clients"
  "$BENCH" "${common[@]}" --keys large.bin --clients 16 --requests-per-client 1 >"$WORK/results/$name-large16.json"
  log "$name: ${SMALL_KIB} KiB objects, ${SMALL_CLIENTS} clients, ${SECONDS_SMALL}s"
  "$BENCH" "${common[@]}" --keys "$SMALL_KEYS" --clients "$SMALL_CLIENTS" --seconds "$SECONDS_SMALL" >"$WORK/results/$name-small.json"
}

# ---- strata serve (file:// backend, RAM cache) ----
AK=BENCHACCESSKEY
SK=bench-secret-key
GW_PORT=$(free_port)
"$STRATA" serve --backend "file://$WORK/data" --listen "127.0.0.1:$GW_PORT" --access-key "$AK" --secret-key "$SK" \
  --cache-ram "$((SIZE_MIB + SMALL_COUNT * SMALL_KIB / 1024 + 256))MiB" >"$WORK/gateway.out" 2>&1 &
GW_PID=$!
PIDS+=("$GW_PID")
for _ in $(seq 1 300); do grep -q "listening on" "$WORK/gateway.out" && break; sleep 0.1; done
grep -q "listening on" "$WORK/gateway.out" || { cat "$WORK/gateway.out" >&2; exit 1; }
run_target gateway "http://127.0.0.1:$GW_PORT" bench "$AK" "$SK"
kill "$GW_PID"; wait "$GW_PID" || true
if [ "$SKIP_PUT" = 0 ]; then
  # A fresh gateway with default limits and cache, spilling to $WORK: its VmHWM is the uploads'.
  GW_PORT=$(free_port)
  TMPDIR="$WORK" "$STRATA" serve --backend "file://$WORK/data" --listen "127.0.0.1:$GW_PORT" --access-key "$AK" \
    --secret-key "$SK" >"$WORK/gateway-put.out" 2>&1 &
  GW_PID=$!
  PIDS+=("$GW_PID")
  for _ in $(seq 1 300); do grep -q "listening on" "$WORK/gateway-put.out" && break; sleep 0.1; done
  grep -q "listening on" "$WORK/gateway-put.out" || { cat "$WORK/gateway-put.out" >&2; exit 1; }
  run_puts gateway "http://127.0.0.1:$GW_PORT" bench "$AK" "$SK" "$GW_PID"
  kill "$GW_PID"; wait "$GW_PID" || true
fi

upload() {  # upload ENDPOINT BUCKET AK SK
  local env=(env -u AWS_CA_BUNDLE AWS_ACCESS_KEY_ID="$3" AWS_SECRET_ACCESS_KEY="$4" AWS_DEFAULT_REGION=us-east-1
             AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null AWS_EC2_METADATA_DISABLED=true)
  "${env[@]}" /usr/bin/aws --endpoint-url "$1" s3 cp --quiet "$WORK/data/bench/large.bin" "s3://$2/large.bin"
  "${env[@]}" /usr/bin/aws --endpoint-url "$1" s3 cp --quiet --recursive "$WORK/data/bench/small" "s3://$2/small/"
}
server_target() {  # server_target NAME SCRIPT
  local name=$1 script=$2
  log "$name: starting"
  bash "$ROOT/scripts/$script" start "$WORK/$name" >"$WORK/$name.env"
  # shellcheck disable=SC1090
  local endpoint access_key secret_key bucket
  endpoint=$(sed -n 's/^endpoint=//p' "$WORK/$name.env"); access_key=$(sed -n 's/^access_key=//p' "$WORK/$name.env")
  secret_key=$(sed -n 's/^secret_key=//p' "$WORK/$name.env"); bucket=$(sed -n 's/^bucket=//p' "$WORK/$name.env")
  log "$name: uploading"
  upload "$endpoint" "$bucket" "$access_key" "$secret_key"
  run_target "$name" "$endpoint" "$bucket" "$access_key" "$secret_key"
  [ "$name" = rgw ] && run_puts "$name" "$endpoint" "$bucket" "$access_key" "$secret_key"
  bash "$ROOT/scripts/$script" stop "$WORK/$name" >/dev/null 2>&1 || true
}
[ "$SKIP_RGW" = 1 ] || server_target rgw rgw.sh
[ "$SKIP_S3RVER" = 1 ] || server_target s3rver s3rver.sh

REPRO="bash bench/gateway_bench.sh ${ARGS[*]}"
/usr/bin/python3 - "$WORK/results" "$OUT/gateway.json" "$TCP1" "$TCP16" "$SIZE_MIB" "$SMALL_KIB" "$SMALL_COUNT" \
  "$SMALL_CLIENTS" "$REPRO" <<'PY'
import json, os, sys
res, out, tcp1, tcp16 = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
size_mib, small_kib, small_count, small_clients, repro = sys.argv[5:10]
doc = {"benchmark": "gateway", "client": "C++ bench/gateway_bench (raw HTTP/1.1 keep-alive, SigV4, bodies discarded)",
       "config": {"large_object_mib": int(size_mib), "small_object_kib": int(small_kib),
                  "small_objects": int(small_count), "small_clients": int(small_clients)},
       "loopback_tcp_bytes_per_second": {"1_stream": tcp1, "16_streams": tcp16}, "targets": {}, "reproduce": repro}
for name in ("gateway", "rgw", "s3rver"):
    def load(kind):
        p = os.path.join(res, "%s-%s.json" % (name, kind))
        return json.load(open(p)) if os.path.exists(p) else None
    l1, l16, small = load("large1"), load("large16"), load("small")
    if not l1: continue
    for mode in ("single", "multipart"):
        if load("put-" + mode): doc.setdefault("puts", {}).setdefault(name, {})[mode] = load("put-" + mode)
    doc["targets"][name] = {
        "large_1_client": l1, "large_16_clients": l16, "small": small,
        "large_1_client_fraction_of_tcp": l1["bytes_per_second"] / tcp1,
        "large_16_clients_fraction_of_tcp": l16["bytes_per_second"] / tcp16,
        "small_requests_per_second": small["requests_per_second"]}
json.dump(doc, open(out, "w"), indent=2)
print("loopback TCP: %.0f MiB/s (1 stream), %.0f MiB/s (16 streams)" % (tcp1 / 2**20, tcp16 / 2**20))
print("%-8s %22s %22s %16s" % ("target", "large GET, 1 client", "large GET, 16 clients", "small GET/s"))
for name, t in doc["targets"].items():
    print("%-8s %10.0f MiB/s (%3.0f%%) %10.0f MiB/s (%3.0f%%) %16.0f" % (
        name, t["large_1_client"]["bytes_per_second"] / 2**20, 100 * t["large_1_client_fraction_of_tcp"],
        t["large_16_clients"]["bytes_per_second"] / 2**20, 100 * t["large_16_clients_fraction_of_tcp"],
        t["small_requests_per_second"]))
if doc.get("puts"):
    print("%-8s %24s %24s %22s" % ("target", "single PUT", "multipart PUT", "peak RSS single/multi"))
    for name, t in doc["puts"].items():
        def fig(m):
            r = t.get(m)
            return "%4d x %4.0f MiB: %5.0f MiB/s" % (r["clients"], r["object_bytes"] / 2**20,
                                                    r["bytes_per_second"] / 2**20) if r else "-"
        rss = "/".join("%.0f MiB" % (t[m]["peak_rss_bytes"] / 2**20) if t.get(m, {}).get("peak_rss_bytes") else "-"
                       for m in ("single", "multipart"))
        print("%-8s %24s %24s %22s" % (name, fig("single"), fig("multipart"), rss))
print("wrote " + out)
PY
echo "reproduce: $REPRO"
