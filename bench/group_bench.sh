#!/usr/bin/env bash
# Cache group bench: N = 1, 2, 4 `strata serve` members (processes on 127.0.0.1, each with its own
# cache directory) all read the same dataset from a Ceph RGW bucket behind the nginx cloud proxy,
# alone and as one cache group, in one run:
#
#   RGW (scripts/rgw.sh, memstore)  ->  nginx cloud proxy (scripts/cloud-proxy.sh: TTFB per
#   request, rate cap per connection, access log)  ->  N x strata serve [--cache-group]  ->  curl
#
# Each member's client (curl, PARALLEL objects at once, bodies to /dev/null) reads every object
# through that member, every member starting at once from a different object. Measured per
# configuration: bytes and GETs the bucket served (counted in nginx's access log, not by the
# members), wall time until the last member is done, aggregate throughput (N x dataset / wall),
# and the members' peer hits and misses (/metrics). Target: the bucket serves the dataset once
# with the group, N times without it. Caches start empty for every configuration.
#
#   bench/group_bench.sh                     # 1 GiB in 16 objects of 64 MiB
#   SIZE_MB=128 OBJ_MB=16 bench/group_bench.sh
# Knobs: SIZE_MB, OBJ_MB, NS ("1 2 4"), PARALLEL (4), TTFB_MS (30), RATE (25m per connection,
# 0 = no cap), MEMBERSHIP (etcd | static), PEER_DEADLINE (2s), STRATA, WORK, OUT.
# Output: a table, bench/out/group.json and bench/out/group.png. Every process it starts (RGW's
# daemons, nginx, etcd, the members) is stopped by PID on exit.
set -euo pipefail

SRC=$(cd "$(dirname "$0")/.." && pwd)
STRATA=${STRATA:-$SRC/build/src/cli/strata}
SIZE_MB=${SIZE_MB:-1024}
OBJ_MB=${OBJ_MB:-64}
NS=${NS:-"1 2 4"}
PARALLEL=${PARALLEL:-4}
TTFB_MS=${TTFB_MS:-30}
RATE=${RATE:-25m}
MEMBERSHIP=${MEMBERSHIP:-etcd}
PEER_DEADLINE=${PEER_DEADLINE:-2s}
WORK=${WORK:-/tmp/strata-group-bench}
OUT=${OUT:-$SRC/bench/out}
PY=/usr/bin/python3
PREFIX=groupbench

[ -x "$STRATA" ] || { echo "no strata binary at $STRATA (build it, or set STRATA=)" >&2; exit 2; }
case $MEMBERSHIP in etcd | static) ;; *) echo "MEMBERSHIP must be etcd or static" >&2; exit 2 ;; esac
[ "$MEMBERSHIP" = static ] || [ -x /usr/bin/etcd ] || { echo "no /usr/bin/etcd (scripts/setup.sh)" >&2; exit 2; }
NOBJ=$((SIZE_MB / OBJ_MB))
[ "$NOBJ" -ge 1 ] && [ $((NOBJ * OBJ_MB)) = "$SIZE_MB" ] || { echo "SIZE_MB must be a multiple of OBJ_MB" >&2; exit 2; }
DATASET_BYTES=$((SIZE_MB << 20))
rm -rf "$WORK"
mkdir -p "$WORK" "$OUT"
unset AWS_CA_BUNDLE SSL_CERT_FILE REQUESTS_CA_BUNDLE CURL_CA_BUNDLE SSL_CERT_DIR AWS_PROFILE AWS_ENDPOINT_URL || true
export AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null AWS_EC2_METADATA_DISABLED=true
export NO_PROXY=127.0.0.1,localhost no_proxy=127.0.0.1,localhost

ETCD_PID=
MEMBER_PIDS=()
stop_members() {
  local p
  for p in "${MEMBER_PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done
  for p in "${MEMBER_PIDS[@]:-}"; do [ -n "$p" ] && wait "$p" 2>/dev/null || true; done
  MEMBER_PIDS=()
}
cleanup() {
  stop_members
  [ -n "$ETCD_PID" ] && kill "$ETCD_PID" 2>/dev/null && wait "$ETCD_PID" 2>/dev/null || true
  "$SRC/scripts/cloud-proxy.sh" stop "$WORK/proxy" >/dev/null 2>&1 || true
  "$SRC/scripts/rgw.sh" stop "$WORK/rgw" >/dev/null 2>&1 || true
}
trap cleanup EXIT

log() { echo "group_bench: $*" >&2; }
now() { date +%s.%N; }
# free_ports N: N distinct free ports, all bound at once (one picked, closed and picked again can
# come back twice: a static group's members would then share a port).
free_ports() {
  $PY -c 'import socket, sys
socks = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in socks: s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))' "$1"
}
metric() {  # metric ENDPOINT NAME -> its value (0 when absent)
  curl -s --max-time 5 "$1/metrics" | awk -v n="$2" '$1 == n { printf "%.0f\n", $2; found = 1 } END { if (!found) print 0 }'
}

# ---- the bucket: RGW, the dataset, the proxy ----
log "starting Ceph RGW"
"$SRC/scripts/rgw.sh" start "$WORK/rgw" > "$WORK/rgw.env"
getenv() { sed -n "s/^$1=//p" "$WORK/rgw.env"; }
RGW=$(getenv endpoint) BUCKET=$(getenv bucket) REGION=$(getenv region)
export AWS_ACCESS_KEY_ID=$(getenv access_key) AWS_SECRET_ACCESS_KEY=$(getenv secret_key) AWS_DEFAULT_REGION=$REGION
log "uploading $NOBJ objects of $OBJ_MB MiB to $RGW (directly, not through the proxy)"
mkdir -p "$WORK/data"
for i in $(seq 0 $((NOBJ - 1))); do
  head -c $((OBJ_MB << 20)) /dev/urandom > "$WORK/data/obj-$(printf %04d "$i")"
done
/usr/bin/aws --endpoint-url "$RGW" s3 cp --quiet --recursive "$WORK/data" "s3://$BUCKET/$PREFIX/"
rm -rf "$WORK/data"
PPORT=$(free_ports 1)
"$SRC/scripts/cloud-proxy.sh" start "$WORK/proxy" "$PPORT" "$RGW" --ttfb-ms "$TTFB_MS" --rate "$RATE" --access-log \
  > /dev/null
PROXY=http://127.0.0.1:$PPORT
ACCESS_LOG=$WORK/proxy/log/access.log
BACKEND="s3://$BUCKET?endpoint=$PROXY&region=$REGION&path_style=1"
log "bucket: RGW behind the cloud proxy $PROXY (ttfb ${TTFB_MS}ms, ${RATE}/s per connection)"

if [ "$MEMBERSHIP" = etcd ]; then
  read -r ECP EPP < <(free_ports 2)
  EC=http://127.0.0.1:$ECP EP=http://127.0.0.1:$EPP
  /usr/bin/etcd --name b --data-dir "$WORK/etcd" --listen-client-urls "$EC" --advertise-client-urls "$EC" \
    --listen-peer-urls "$EP" --initial-advertise-peer-urls "$EP" --initial-cluster "b=$EP" > "$WORK/etcd.log" 2>&1 &
  ETCD_PID=$!
  for _ in $(seq 300); do grep -q "ready to serve client requests" "$WORK/etcd.log" && break; sleep 0.1; done
  grep -q "ready to serve client requests" "$WORK/etcd.log" || { tail "$WORK/etcd.log"; exit 1; }
fi
(umask 077; head -c 32 /dev/urandom | base64 > "$WORK/secret")  # a group secret file must be private

# ---- one configuration: N members, alone or grouped, all reading the dataset at once ----
run() {  # run N MODE(alone|group)
  local n=$1 mode=$2 run_dir="$WORK/n$1-$2" i j port
  mkdir -p "$run_dir"
  local peers=() endpoints=() group_url=""
  for port in $(free_ports "$n"); do peers+=("127.0.0.1:$port"); done
  if [ "$mode" = group ]; then
    if [ "$MEMBERSHIP" = etcd ]; then
      group_url="etcd://${EC#http://}/bench-n$n"
    else
      group_url="static://$(IFS=,; echo "${peers[*]}")"
    fi
  fi
  for i in $(seq 0 $((n - 1))); do
    local args=(serve --backend "$BACKEND" --listen 127.0.0.1:0 --public-read "$BUCKET" --cache-ram 256MiB
                --cache-disk $((2 * SIZE_MB + 64))MiB --cache-dir "$run_dir/cache$i")
    [ "$mode" = group ] && args+=(--cache-group "$group_url" --peer-listen "${peers[$i]}"
                                   --group-secret-file "$WORK/secret" --peer-deadline "$PEER_DEADLINE")
    "$STRATA" "${args[@]}" > "$run_dir/member$i.log" 2>&1 &
    MEMBER_PIDS+=($!)
  done
  for i in $(seq 0 $((n - 1))); do
    for _ in $(seq 300); do grep -q "listening on" "$run_dir/member$i.log" && break; sleep 0.1; done
    local ep; ep=$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$run_dir/member$i.log" | head -1)
    [ -n "$ep" ] || { cat "$run_dir/member$i.log"; exit 1; }
    endpoints+=("$ep")
  done
  if [ "$mode" = group ]; then  # every member sees all N before the clock starts
    for i in $(seq 0 $((n - 1))); do
      for _ in $(seq 300); do [ "$(metric "${endpoints[$i]}" strata_group_members)" = "$n" ] && break; sleep 0.1; done
      [ "$(metric "${endpoints[$i]}" strata_group_members)" = "$n" ] || { log "member $i never saw $n members"; exit 1; }
    done
  fi
  local log_from; log_from=$(stat -c %s "$ACCESS_LOG" 2>/dev/null || echo 0)
  local clients=() t0 t1
  for i in $(seq 0 $((n - 1))); do  # member i starts at object i*NOBJ/n
    for j in $(seq 0 $((NOBJ - 1))); do
      printf 'url = "%s/%s/%s/obj-%04d"\noutput = "/dev/null"\n' "${endpoints[$i]}" "$BUCKET" "$PREFIX" \
        $(((j + i * NOBJ / n) % NOBJ))
    done > "$run_dir/urls$i"
  done
  t0=$(now)
  for i in $(seq 0 $((n - 1))); do
    curl -sS --no-progress-meter --parallel --parallel-max "$PARALLEL" --config "$run_dir/urls$i" \
      -w '%{http_code} %{size_download}\n' > "$run_dir/client$i.out" 2> "$run_dir/client$i.err" &
    clients+=($!)
  done
  local failed=0
  for p in "${clients[@]}"; do wait "$p" || failed=1; done
  t1=$(now)
  local hits=0 misses=0
  for i in $(seq 0 $((n - 1))); do
    local got; got=$(awk '$1 == 200 { s += $2; c++ } END { printf "%d %.0f\n", c, s }' "$run_dir/client$i.out")
    if [ "$failed" = 1 ] || [ "$got" != "$NOBJ $DATASET_BYTES" ]; then
      log "member $i read '$got' (want '$NOBJ $DATASET_BYTES'):"; cat "$run_dir/client$i.err" >&2; exit 1
    fi
    hits=$((hits + $(metric "${endpoints[$i]}" strata_group_peer_hits_total)))
    misses=$((misses + $(metric "${endpoints[$i]}" strata_group_peer_misses_total)))
  done
  stop_members  # requests in flight (read-ahead) end and reach the access log
  # GETs of the dataset after log_from and their response bytes ("combined": "GET /B/K HTTP/1.1" STATUS BYTES).
  local backend; backend=$(tail -c +$((log_from + 1)) "$ACCESS_LOG" |
    awk -v p="\"GET /$BUCKET/$PREFIX/" 'index($0, p) { split(substr($0, index($0, p)), f, "\""); split(f[3], s, " ");
      n++; b += s[2] } END { printf "%d %.0f\n", n, b }')  # %.0f: mawk's %d stops at 2^31
  local wall; wall=$($PY -c "print(f'{$t1 - $t0:.3f}')")
  log "N=$n $mode: ${wall}s, bucket GETs/bytes: $backend, peer hits $hits, misses $misses"
  echo "{\"members\": $n, \"mode\": \"$mode\", \"wall_s\": $wall, \"bucket_gets\": ${backend% *}," \
    "\"bucket_bytes\": ${backend#* }, \"peer_hits\": $hits, \"peer_misses\": $misses}" >> "$WORK/results.jsonl"
}

for n in $NS; do
  run "$n" alone
  run "$n" group
done

REPRO="SIZE_MB=$SIZE_MB OBJ_MB=$OBJ_MB NS=\"$NS\" PARALLEL=$PARALLEL TTFB_MS=$TTFB_MS RATE=$RATE MEMBERSHIP=$MEMBERSHIP PEER_DEADLINE=$PEER_DEADLINE bash bench/group_bench.sh"
$PY - "$WORK/results.jsonl" "$OUT/group.json" "$DATASET_BYTES" "$REPRO" "$TTFB_MS" "$RATE" "$NOBJ" "$OBJ_MB" \
  "$PARALLEL" "$MEMBERSHIP" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
out, dataset, repro = sys.argv[2], int(sys.argv[3]), sys.argv[4]
ttfb, rate, nobj, obj_mb, parallel, membership = sys.argv[5:11]
MiB = 1 << 20
for r in rows:
    r["bucket_bytes_over_dataset"] = round(r["bucket_bytes"] / dataset, 3)
    r["aggregate_mib_per_s"] = round(r["members"] * dataset / MiB / r["wall_s"], 1)
ns = sorted({r["members"] for r in rows})
def series(mode, field):
    by = {r["members"]: r[field] for r in rows if r["mode"] == mode}
    return [by.get(n) for n in ns]
labels = {"alone": "each member alone", "group": "one cache group"}
charts = []
for title, field, unit in (("Bytes fetched from the bucket (x dataset)", "bucket_bytes_over_dataset", "x dataset"),
                           ("Wall time until every member has read it", "wall_s", "s"),
                           ("Aggregate throughput (N x dataset / wall)", "aggregate_mib_per_s", "MiB/s")):
    charts.append({"title": title, "ylabel": unit, "groups": [f"N={n}" for n in ns],
                   "series": [{"label": labels[m], "values": series(m, field)} for m in ("alone", "group")]})
doc = {"benchmark": "group", "title": f"strata cache group: N members read the same {dataset // MiB} MiB from RGW "
       f"behind nginx (ttfb {ttfb} ms, {rate}/s per connection)",
       "config": {"dataset_bytes": dataset, "objects": int(nobj), "object_mib": int(obj_mb),
                  "client_parallel_objects": int(parallel), "ttfb_ms": int(ttfb), "rate_per_connection": rate,
                  "membership": membership},
       "results": rows, "charts": charts, "reproduce": repro}
json.dump(doc, open(out, "w"), indent=2)
print(f"\ndataset {dataset // MiB} MiB in {nobj} objects; bucket = RGW behind nginx (ttfb {ttfb} ms, {rate}/s per connection)")
print(f"{'N':>2} {'mode':<6} {'wall s':>8} {'agg MiB/s':>10} {'bucket GETs':>12} {'bucket MiB':>11} {'x dataset':>10} {'peer hits':>10} {'misses':>7}")
for r in rows:
    print(f"{r['members']:>2} {r['mode']:<6} {r['wall_s']:>8.2f} {r['aggregate_mib_per_s']:>10.1f} {r['bucket_gets']:>12} "
          f"{r['bucket_bytes'] / MiB:>11.1f} {r['bucket_bytes_over_dataset']:>10.3f} {r['peer_hits']:>10} {r['peer_misses']:>7}")
print(f"\nreproduce: {repro}")
PY
rc=0
$PY "$SRC/bench/plot.py" "$OUT/group.json" "$OUT/group.png" || rc=$?
case $rc in
  0) echo "wrote $OUT/group.json and $OUT/group.png" ;;
  3) echo "wrote $OUT/group.json (no matplotlib: apt-get install python3-matplotlib for the PNG)" ;;
  *) echo "wrote $OUT/group.json; plot.py failed ($rc)"; exit 1 ;;
esac
