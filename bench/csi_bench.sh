#!/usr/bin/env bash
# The seed exercise through a CSI-published volume against `strata mount` directly, in one run,
# over the same emulated cloud bucket (as bench/mount_bench.sh's seed exercise):
#
#   file:// data -> strata serve (no cache: a plain S3 front) -> nginx cloud proxy (TTFB per request,
#   rate cap per connection; its access log counts the bucket's bytes) -> the mount
#
# SEED_N files of SEED_MB, each read with `cat` one after another inside a pod's own mount namespace
# (unshare -m, slave propagation), cold (empty cache, page cache dropped) then warm (same mount,
# within the metadata TTL), through:
#   direct  `strata mount URL MNT --cache-dir ... --cache-ram ... --cache-disk ... --metadata-ttl ...`
#   csi     `strata csi` (node mode) + a kubelet-like client (bench/csi_client.py, python3-grpcio):
#           NodeStageVolume with the same cache options, NodePublishVolume into a pod's target
# REPEAT times: the cold passes one mount at a time, alternating which goes first; the warm passes
# paired file by file (each file through both mounts in turn), since one warm pass is ~1 s of
# `cat`s from the page cache and, on a shared machine, the load moves it more than any difference
# between the mounts. Medians and csi/direct ratios, and for warm the median of the per-file
# ratios (the figure to compare: preemption by other work is a long tail). Then two pods on one node: one staged
# volume published twice, both pods' `cat` loops at once on an empty cache: the bucket's bytes
# (proxy log) over the dataset's.
#   SEED_N=64 REPEAT=1 bench/csi_bench.sh       (a quick run)
set -euo pipefail

SRC=$(cd "$(dirname "$0")/.." && pwd)
STRATA=${STRATA:-$SRC/build/src/cli/strata}
SEED_N=${SEED_N:-256}
SEED_MB=${SEED_MB:-4}
TTFB_MS=${TTFB_MS:-30}
RATE=${RATE:-25m}
REPEAT=${REPEAT:-3}
# One metadata TTL for both mounts, longer than two cold passes: with strata's 10 s default a ~9 s cold pass
# leaves the warm pass straddling the expiry, and which files revalidate then depends on the timing.
METADATA_TTL=${METADATA_TTL:-120s}
WORK=${WORK:-/tmp/strata-csi-bench}
OUT=${OUT:-$SRC/bench/out}
PY=/usr/bin/python3
CLIENT="$PY $SRC/bench/csi_client.py"
AK=benchkey
SK=benchsecret0123456789

[ -x "$STRATA" ] || { echo "no strata binary at $STRATA (build it, or set STRATA=)" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "run as root (FUSE mounts, bind mounts, drop_caches)" >&2; exit 2; }
mkdir -p "$WORK" "$OUT"
unset AWS_CA_BUNDLE SSL_CERT_FILE REQUESTS_CA_BUNDLE CURL_CA_BUNDLE SSL_CERT_DIR || true

PIDS=()
KUBELET=$WORK/kubelet
MNT=$WORK/mnt
SOCK=$WORK/csi/csi.sock
cleanup() {
  for t in "$KUBELET"/pods/*/mount; do mountpoint -q "$t" 2>/dev/null && umount -l "$t" || true; done
  mountpoint -q "$KUBELET/staging" 2>/dev/null && fusermount3 -u -z "$KUBELET/staging" || true
  mountpoint -q "$MNT" 2>/dev/null && fusermount3 -u -z "$MNT" || true
  mountpoint -q "$KUBELET" 2>/dev/null && umount -l "$KUBELET" || true
  for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done
  "$SRC/scripts/cloud-proxy.sh" stop "$WORK/proxy" >/dev/null 2>&1 || true
}
trap cleanup EXIT

now() { date +%s.%N; }
elapsed() { $PY -c "print(f'{$(now) - $1:.3f}')"; }
free_port() { $PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
drop_caches() { sync; echo 3 > /proc/sys/vm/drop_caches; }

# ---- data and the emulated cloud bucket ----
DATA=$WORK/data/bench/seed
if [ "$(cat "$WORK/data.stamp" 2>/dev/null)" != "$SEED_N $SEED_MB" ]; then
  rm -rf "$WORK/data"; mkdir -p "$DATA"
  for i in $(seq 0 $((SEED_N - 1))); do head -c $((SEED_MB << 20)) /dev/urandom > "$DATA/f$(printf %04d "$i").bin"; done
  echo "$SEED_N $SEED_MB" > "$WORK/data.stamp"
fi
"$STRATA" serve --backend "file://$WORK/data" --listen 127.0.0.1:0 --access-key $AK --secret-key $SK \
  --cache-ram 0 --metadata-ttl 0s --workers 64 > "$WORK/serve.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 300); do grep -q "listening on" "$WORK/serve.log" && break; sleep 0.1; done
GW=$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$WORK/serve.log" | head -1)
[ -n "$GW" ] || { cat "$WORK/serve.log"; exit 1; }
PPORT=$(free_port)
"$SRC/scripts/cloud-proxy.sh" start "$WORK/proxy" "$PPORT" "$GW" --ttfb-ms "$TTFB_MS" --rate "$RATE" --access-log >/dev/null
URL="s3://bench/seed?endpoint=http://127.0.0.1:$PPORT&region=us-east-1&path_style=1"
ACCESS_LOG=$WORK/proxy/log/access.log
# nginx logs a request as it ends, in the same step as its last bytes go out: once a marker request
# sent now is in the log, so is every request whose response a client had before it. OPTIONS is
# counted by none of the tallies here.
sync_log() {
  local marker="/__log_sync/$RANDOM$RANDOM"
  curl -s -o /dev/null -X OPTIONS "http://127.0.0.1:$PPORT$marker" || true
  for _ in $(seq 400); do grep -qF "OPTIONS $marker " "$ACCESS_LOG" && return 0; sleep 0.05; done
  echo "the proxy's access log never showed $marker" >&2; return 1
}
bucket_bytes_since() {  # LINE: response bytes of the GETs the bucket served since that line of the log
  sync_log
  tail -n +"$(($1 + 1))" "$ACCESS_LOG" | awk '$6 == "\"GET" && $7 !~ /[?&](list-type|prefix|delimiter)=/ { b += $10 } END { print b + 0 }'
}
log_lines() { sync_log; wc -l < "$ACCESS_LOG"; }

# ---- the kubelet's side: a shared kubelet dir, the driver, pods in their own mount namespaces ----
mkdir -p "$KUBELET" "$MNT"
mount --bind "$KUBELET" "$KUBELET" && mount --make-rshared "$KUBELET"
"$STRATA" csi --endpoint "unix://$SOCK" --mode node --node-id bench-node --state-dir "$WORK/state" \
  --log-level info > "$WORK/csi.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 300); do $CLIENT "$SOCK" info >/dev/null 2>&1 && break; sleep 0.1; done
CACHE_OPTS=(cache-ram=2GiB cache-disk=20GiB "metadata-ttl=$METADATA_TTL")
export AWS_ACCESS_KEY_ID=$AK AWS_SECRET_ACCESS_KEY=$SK  # the client sends them as the request's secrets

pod_pass() {  # TARGET: `cat` of every file, one at a time, inside a pod's own mount namespace; prints seconds
  unshare -m --propagation slave -- bash -c "t=\$EPOCHREALTIME; for f in '$1'/*; do cat \"\$f\" > /dev/null; done;
    echo \$(( \${EPOCHREALTIME/./} - \${t/./} ))" | awk '{ printf "%.3f\n", $1 / 1e6 }'
}
# The warm passes, paired file by file: the pod reads each file through the direct mount and through
# its volume one right after the other (which goes first alternating per file), so a load that
# changes during the pass (other builds on the 2 cores) weighs on both alike. Writes one line per
# file, "direct_us csi_us", to FILE.
paired_pass() {  # DIRECT_DIR TARGET FILE
  unshare -m --propagation slave -- bash -c '
    a=$1; b=$2; i=0
    for f in "$a"/*; do
      n=${f##*/}; t0=$EPOCHREALTIME
      if (( i++ % 2 )); then
        cat "$b/$n" > /dev/null; t1=$EPOCHREALTIME; cat "$a/$n" > /dev/null; t2=$EPOCHREALTIME
        echo $(( ${t2/./} - ${t1/./} )) $(( ${t1/./} - ${t0/./} ))
      else
        cat "$a/$n" > /dev/null; t1=$EPOCHREALTIME; cat "$b/$n" > /dev/null; t2=$EPOCHREALTIME
        echo $(( ${t1/./} - ${t0/./} )) $(( ${t2/./} - ${t1/./} ))
      fi
    done' _ "$1" "$2" > "$3"
}
declare -A R
rm -f "$WORK"/warm-*.us
direct_cold() {  # RUN
  rm -rf "$WORK/cache-direct"
  "$STRATA" mount "$URL" "$MNT" --cache-dir "$WORK/cache-direct" --cache-ram 2GiB --cache-disk 20GiB \
    --metadata-ttl "$METADATA_TTL" > /dev/null
  ls "$MNT" > /dev/null
  R[direct,cold,$1]=$(pod_pass "$MNT")
}
csi_cold() {  # RUN
  rm -rf "$WORK/state/cache"
  $CLIENT "$SOCK" stage vol-seed "$KUBELET/staging" "url=$URL" "${CACHE_OPTS[@]}"
  $CLIENT "$SOCK" publish vol-seed "$KUBELET/staging" "$KUBELET/pods/a/mount"
  ls "$KUBELET/pods/a/mount" > /dev/null
  R[csi,cold,$1]=$(pod_pass "$KUBELET/pods/a/mount")
}
for r in $(seq 1 "$REPEAT"); do
  # Cold: one mount at a time (the bucket is the cost), alternating which goes first, so a load
  # that drifts during the run, or the bucket's own page cache, favours neither.
  drop_caches
  if [ $((r % 2)) = 1 ]; then direct_cold "$r"; csi_cold "$r"; else csi_cold "$r"; direct_cold "$r"; fi
  paired_pass "$MNT" "$KUBELET/pods/a/mount" "$WORK/warm-$r.us"
  read -r R[direct,warm,$r] R[csi,warm,$r] < <(awk '{ d += $1; c += $2 } END { printf "%.3f %.3f\n", d / 1e6, c / 1e6 }' \
    "$WORK/warm-$r.us")
  fusermount3 -u "$MNT"
  $CLIENT "$SOCK" unpublish vol-seed "$KUBELET/pods/a/mount"
  $CLIENT "$SOCK" unstage vol-seed "$KUBELET/staging"
  printf '  run %d: direct cold %ss warm %ss | csi cold %ss warm %ss (load %s)\n' "$r" "${R[direct,cold,$r]}" \
    "${R[direct,warm,$r]}" "${R[csi,cold,$r]}" "${R[csi,warm,$r]}" "$(cut -d' ' -f1 /proc/loadavg)"
done

# ---- two pods on one node: one staged mount, the dataset leaves the bucket once ----
rm -rf "$WORK/state/cache"
$CLIENT "$SOCK" stage vol-two "$KUBELET/staging" "url=$URL" "${CACHE_OPTS[@]}"
$CLIENT "$SOCK" publish vol-two "$KUBELET/staging" "$KUBELET/pods/a/mount"
$CLIENT "$SOCK" publish vol-two "$KUBELET/staging" "$KUBELET/pods/b/mount" ro
drop_caches
l0=$(log_lines)
t=$(now)
pod_pass "$KUBELET/pods/a/mount" > "$WORK/pod-a.s" & pa=$!
pod_pass "$KUBELET/pods/b/mount" > "$WORK/pod-b.s" & pb=$!
wait $pa $pb
TWO_S=$(elapsed "$t")
TWO_BYTES=$(bucket_bytes_since "$l0")
$CLIENT "$SOCK" unpublish vol-two "$KUBELET/pods/a/mount"
$CLIENT "$SOCK" unpublish vol-two "$KUBELET/pods/b/mount"
$CLIENT "$SOCK" unstage vol-two "$KUBELET/staging"

ARGS=""
for k in "${!R[@]}"; do ARGS+="$k=${R[$k]} "; done
WARM_FILES="$(ls "$WORK"/warm-*.us | head -n "$REPEAT")" $PY - "$OUT/csi.json" "$SEED_N" "$SEED_MB" "$TTFB_MS" "$RATE" "$TWO_S" "$TWO_BYTES" "$(cat "$WORK/pod-a.s")" \
  "$(cat "$WORK/pod-b.s")" $ARGS <<'PYEOF'
import json, os, statistics, sys
out, n, mb, ttfb, rate, two_s, two_bytes, pa, pb = sys.argv[1:10]
runs = {}
for a in sys.argv[10:]:
    k, v = a.split("=")
    mode, phase, r = k.split(",")
    runs.setdefault((mode, phase), []).append(float(v))
med = {k: statistics.median(v) for k, v in runs.items()}
dataset = int(n) * int(mb) * 1048576
print(f"\nseed exercise: {n} x {mb} MiB, cat one file at a time (ttfb {ttfb} ms, {rate}/s per connection), "
      f"medians of {len(runs[('direct', 'cold')])}")
print(f"{'':10s}{'direct s':>10s}{'csi s':>10s}{'csi/direct':>12s}")
ratios = {}
for phase in ("cold", "warm"):
    d, c = med[("direct", phase)], med[("csi", phase)]
    ratios[phase] = c / d
    print(f"{phase:10s}{d:10.2f}{c:10.2f}{c / d:11.3f}x")
# Each file's two warm reads were adjacent in time: the median of their ratios is what the mount
# costs, with preemption by other work (a long tail on a shared machine) left out.
pairs = [tuple(map(int, line.split())) for f in os.environ["WARM_FILES"].split() for line in open(f) if line.strip()]
per_file = statistics.median(c / d for d, c in pairs if d > 0)
diff_ms = statistics.median((c - d) / 1000 for d, c in pairs)
print(f"warm, per file (median of {len(pairs)} adjacent pairs): direct {statistics.median(d for d, _ in pairs) / 1000:.2f} ms, "
      f"csi {statistics.median(c for _, c in pairs) / 1000:.2f} ms, csi/direct {per_file:.3f}x, csi-direct {diff_ms:+.3f} ms")
served = int(two_bytes) / dataset
print(f"two pods on one node, cold, at once: {float(two_s):.2f} s (pods {pa} s, {pb} s); "
      f"bucket served {int(two_bytes) / 1048576:.1f} MiB = {served:.3f} x the dataset")
doc = {"title": "seed exercise through a CSI-published volume vs strata mount",
       "config": {"files": int(n), "file_mb": int(mb), "ttfb_ms": int(ttfb), "rate_per_connection": rate},
       "seconds": {f"{m}_{p}": v for (m, p), v in runs.items()}, "median_s": {f"{m}_{p}": v for (m, p), v in med.items()},
       "csi_over_direct": ratios,
       "warm_per_file": {"pairs": len(pairs), "csi_over_direct_median": per_file, "csi_minus_direct_ms_median": diff_ms},
       "two_pods": {"wall_s": float(two_s), "pod_s": [float(pa), float(pb)], "bucket_bytes": int(two_bytes),
                    "dataset_bytes": dataset, "bucket_over_dataset": served}}
json.dump(doc, open(out, "w"), indent=2)
print(f"wrote {out}")
PYEOF
echo "reproduce: SEED_N=$SEED_N SEED_MB=$SEED_MB TTFB_MS=$TTFB_MS RATE=$RATE REPEAT=$REPEAT METADATA_TTL=$METADATA_TTL STRATA=$STRATA $SRC/bench/csi_bench.sh"
