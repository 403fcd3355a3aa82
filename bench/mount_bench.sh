#!/usr/bin/env bash
# strata mount vs s3fs (use_cache) vs rclone mount (--vfs-cache-mode full), in one run, over
# the same emulated cloud bucket:
#
#   file:// data  ->  strata serve (no cache: a plain S3 front)  ->  nginx cloud proxy
#                     (scripts/cloud-proxy.sh: TTFB per request, rate cap per connection)  ->  clients
#
# The proxy (not `strata serve --emulate`) adds the latency because it caps each client
# connection, as a cloud bucket does; --emulate would apply below the gateway's own parallel
# fetches and let a single client stream run faster than one connection could.
#
# rclone runs with --use-server-modtime: without it, `ls -l` HEADs every object for its
# mtime metadata (a 5,000-object ls -lR took 165 s in a trial run).
# Workloads (each tool gets a fresh mount and an empty cache):
#   (a) cold sequential read of one SIZE_MB file with 4 MiB read() calls (dd bs=4M)
#   (b) warm re-read (same mount: page cache + the tool's cache); (b2) the same after
#       dropping the kernel page cache (the tool's own cache only)
#   (c) NFILES files of FILE_KB read in random order by THREADS threads (Python)
#   (d) ls -lR over NLIST objects: first listing, then again (cached)
#   (e) the seed exercise: SEED_N files of SEED_MB, each read with `cat` one after another:
#       cold; warm in the same mount once the metadata TTLs (SEED_TTL) expired; warm after a
#       remount with the page cache dropped; `aws s3 cp --recursive` as the cold yardstick, and
#       the same `cat` loop over its local copies in the page cache as the floor of any warm pass
# Sizes are configurable so it can run small; WORKLOADS picks "main", "seed" or both:
#   SIZE_MB=64 NFILES=500 NLIST=5000 bench/mount_bench.sh
#   WORKLOADS=seed SEED_N=32 bench/mount_bench.sh
# Output: figures, strata's ratio to the best other tool, bucket requests per seed pass (the proxy's
# access log), bench/out/mount.json + mount.png and mount_seed.json + mount_seed.png (bench/plot.py).
set -euo pipefail

SRC=$(cd "$(dirname "$0")/.." && pwd)
STRATA=${STRATA:-$SRC/build/src/cli/strata}
SIZE_MB=${SIZE_MB:-1024}
NFILES=${NFILES:-10000}
FILE_KB=${FILE_KB:-100}
NLIST=${NLIST:-100000}
THREADS=${THREADS:-8}
TTFB_MS=${TTFB_MS:-30}
RATE=${RATE:-25m}
TOOLS=${TOOLS:-"strata s3fs rclone"}
TTL=${TTL:-300}  # metadata cache seconds, the same for every tool
WORKLOADS=${WORKLOADS:-"main seed"}
SEED_N=${SEED_N:-256}
SEED_MB=${SEED_MB:-4}
SEED_TTL=${SEED_TTL:-10}  # the seed exercise's metadata TTL (strata's default): it expires during the cold pass
WORK=${WORK:-/tmp/strata-mount-bench}
OUT=${OUT:-$SRC/bench/out}
PY=/usr/bin/python3
AK=benchkey
SK=benchsecret0123456789

[ -x "$STRATA" ] || { echo "no strata binary at $STRATA (build it, or set STRATA=)" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "run as root (FUSE mounts, drop_caches)" >&2; exit 2; }
mkdir -p "$WORK" "$OUT"
unset AWS_CA_BUNDLE SSL_CERT_FILE REQUESTS_CA_BUNDLE CURL_CA_BUNDLE SSL_CERT_DIR || true

PIDS=()
MNT=$WORK/mnt
cleanup() {
  mountpoint -q "$MNT" 2>/dev/null && fusermount3 -u -z "$MNT" 2>/dev/null || true
  for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done
  "$SRC/scripts/cloud-proxy.sh" stop "$WORK/proxy" >/dev/null 2>&1 || true
}
trap cleanup EXIT

now() { date +%s.%N; }
elapsed() { $PY -c "print(f'{$(now) - $1:.3f}')"; }
free_port() { $PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
drop_caches() { sync; echo 3 > /proc/sys/vm/drop_caches; }
plot() {  # JSON PNG: bench/plot.py (matplotlib from Debian); the JSON stays when it cannot draw
  if $PY "$SRC/bench/plot.py" "$1" "$2"; then echo "wrote $2"; else echo "note: no PNG ($2): see plot.py's message"; fi
}

# ---- data (reused across runs when the sizes match) ----
DATA=$WORK/data/bench
STAMP="$SIZE_MB $NFILES $FILE_KB $NLIST $SEED_N $SEED_MB"
if [ "$(cat "$WORK/data.stamp" 2>/dev/null)" != "$STAMP" ]; then
  echo "generating data in $DATA ($STAMP)..."
  rm -rf "$WORK/data"; mkdir -p "$DATA"
  dd if=/dev/urandom of="$DATA/big.bin" bs=1M count="$SIZE_MB" status=none
  $PY - "$DATA" "$NFILES" "$FILE_KB" "$NLIST" <<'EOF'
import os, sys
root, nfiles, kb, nlist = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
blob = os.urandom(kb * 1024 + 4096)
for i in range(nfiles):
    d = f"{root}/small/d{i // 100:03d}"
    if i % 100 == 0: os.makedirs(d, exist_ok=True)
    with open(f"{d}/f{i:05d}.bin", "wb") as f: f.write(blob[i % 4096:i % 4096 + kb * 1024])
for i in range(nlist):
    d = f"{root}/list/d{i // 1000:03d}"
    if i % 1000 == 0: os.makedirs(d, exist_ok=True)
    with open(f"{d}/o{i:06d}", "wb") as f: f.write(b"x")
EOF
  mkdir -p "$DATA/seed"
  for i in $(seq 0 $((SEED_N - 1))); do
    head -c $((SEED_MB << 20)) /dev/urandom > "$DATA/seed/f$(printf %04d "$i").bin"
  done
  echo "$STAMP" > "$WORK/data.stamp"
fi

# ---- the emulated cloud bucket ----
"$STRATA" serve --backend "file://$WORK/data" --listen 127.0.0.1:0 --access-key $AK --secret-key $SK \
  --cache-ram 0 --metadata-ttl 0s --workers 64 > "$WORK/serve.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 300); do grep -q "listening on" "$WORK/serve.log" && break; sleep 0.1; done
GW=$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$WORK/serve.log" | head -1)
[ -n "$GW" ] || { cat "$WORK/serve.log"; exit 1; }
PPORT=$(free_port)
"$SRC/scripts/cloud-proxy.sh" start "$WORK/proxy" "$PPORT" "$GW" --ttfb-ms "$TTFB_MS" --rate "$RATE" --access-log >/dev/null
EP=http://127.0.0.1:$PPORT
echo "bucket: $GW behind the cloud proxy $EP (ttfb ${TTFB_MS}ms, ${RATE}/s per connection)"

# ---- mounting each tool (foreground child, stopped by PID) ----
MOUNT_PID=
wait_mounted() {
  for _ in $(seq 600); do
    grep -q " $MNT fuse" /proc/self/mounts && return 0
    kill -0 "$MOUNT_PID" 2>/dev/null || { echo "mount died; log:"; tail -20 "$WORK/$1.log"; return 1; }
    sleep 0.05
  done
  echo "mount did not appear"; return 1
}
mount_tool() {  # TOOL [TTL [keep: reuse the cache of the previous mount]]
  local tool=$1 TTL=${2:-$TTL}
  [ "${3:-}" = keep ] || rm -rf "$WORK/cache-$tool"
  mkdir -p "$WORK/cache-$tool" "$MNT"
  case $tool in
    strata)
      AWS_ACCESS_KEY_ID=$AK AWS_SECRET_ACCESS_KEY=$SK "$STRATA" mount \
        "s3://bench?endpoint=$EP&region=us-east-1&path_style=1" "$MNT" --foreground \
        --cache-dir "$WORK/cache-strata" --cache-ram 2GiB --cache-disk 20GiB \
        --attr-ttl ${TTL}s --entry-ttl ${TTL}s --dir-ttl ${TTL}s > "$WORK/strata.log" 2>&1 &
      ;;
    s3fs)
      echo "$AK:$SK" > "$WORK/s3fs.passwd"; chmod 600 "$WORK/s3fs.passwd"
      s3fs bench "$MNT" -f -o "url=$EP,use_path_request_style,sigv4,endpoint=us-east-1,passwd_file=$WORK/s3fs.passwd,use_cache=$WORK/cache-s3fs,stat_cache_expire=$TTL,dbglevel=warn,parallel_count=8,multireq_max=20" \
        > "$WORK/s3fs.log" 2>&1 &
      ;;
    rclone)
      RCLONE_CONFIG=/dev/null RCLONE_CONFIG_B_TYPE=s3 RCLONE_CONFIG_B_PROVIDER=Other \
      RCLONE_CONFIG_B_ACCESS_KEY_ID=$AK RCLONE_CONFIG_B_SECRET_ACCESS_KEY=$SK RCLONE_CONFIG_B_ENDPOINT=$EP \
      RCLONE_CONFIG_B_REGION=us-east-1 RCLONE_CONFIG_B_FORCE_PATH_STYLE=true \
        rclone mount b:bench "$MNT" --vfs-cache-mode full --cache-dir "$WORK/cache-rclone" \
        --dir-cache-time ${TTL}s --attr-timeout ${TTL}s --use-server-modtime --read-only \
        > "$WORK/rclone.log" 2>&1 &
      ;;
  esac
  MOUNT_PID=$!
  wait_mounted "$tool"
}
unmount_tool() {
  fusermount3 -u "$MNT" 2>/dev/null || fusermount3 -u -z "$MNT"
  for _ in $(seq 200); do kill -0 "$MOUNT_PID" 2>/dev/null || break; sleep 0.05; done
  kill "$MOUNT_PID" 2>/dev/null || true
  wait "$MOUNT_PID" 2>/dev/null || true
}

read_small() {  # prints seconds for reading NFILES files in a seeded random order with THREADS threads
  $PY - "$MNT/small" "$NFILES" "$THREADS" <<'EOF'
import concurrent.futures, random, sys, time
root, n, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
paths = [f"{root}/d{i // 100:03d}/f{i:05d}.bin" for i in range(n)]
random.Random(42).shuffle(paths)
def read(p):
    with open(p, "rb") as f:
        return len(f.read())
t = time.time()
with concurrent.futures.ThreadPoolExecutor(threads) as ex:
    total = sum(ex.map(read, paths))
print(f"{time.time() - t:.3f} {total}")
EOF
}

declare -A R
for tool in $TOOLS; do
  [[ " $WORKLOADS " == *" main "* ]] || break
  echo "== $tool"
  mount_tool "$tool" || { echo "skipping $tool"; continue; }
  drop_caches
  t=$(now); dd if="$MNT/big.bin" of=/dev/null bs=4M status=none; R[$tool,cold_s]=$(elapsed "$t")
  t=$(now); dd if="$MNT/big.bin" of=/dev/null bs=4M status=none; R[$tool,warm_s]=$(elapsed "$t")
  drop_caches
  t=$(now); dd if="$MNT/big.bin" of=/dev/null bs=4M status=none; R[$tool,warm_nopc_s]=$(elapsed "$t")
  read -r s bytes < <(read_small)
  R[$tool,small_s]=$s
  [ "$bytes" = $((NFILES * FILE_KB * 1024)) ] || echo "  warning: read $bytes bytes of small files"
  t=$(now); n=$(ls -lR "$MNT/list" | grep -c '^-' || true); R[$tool,ls1_s]=$(elapsed "$t")
  [ "$n" = "$NLIST" ] || echo "  warning: ls -lR saw $n of $NLIST objects"
  t=$(now); ls -lR "$MNT/list" > /dev/null; R[$tool,ls2_s]=$(elapsed "$t")
  t=$(now); find "$MNT/list" -type f | wc -l > /dev/null; R[$tool,find_s]=$(elapsed "$t")
  unmount_tool
  printf '  cold %ss  warm %ss  warm(no page cache) %ss  small %ss  ls-lR %ss then %ss  find %ss\n' \
    "${R[$tool,cold_s]}" "${R[$tool,warm_s]}" "${R[$tool,warm_nopc_s]}" "${R[$tool,small_s]}" \
    "${R[$tool,ls1_s]}" "${R[$tool,ls2_s]}" "${R[$tool,find_s]}"
done

# ---- (e) the seed exercise ----
ACCESS_LOG=$WORK/proxy/log/access.log
# Requests the bucket saw since line $1 of the proxy's log, as "lists heads gets".
requests_since() {
  sync_log
  tail -n +"$(($1 + 1))" "$ACCESS_LOG" | awk '
    $6 == "\"HEAD" { h++; next }
    $6 == "\"GET" && ($7 ~ /[?&](list-type|prefix|delimiter)=/) { l++; next }
    $6 == "\"GET" { g++ }
    END { printf "%d %d %d\n", l, h, g }'
}
# nginx logs a request as it ends, in the same step as its last bytes go out: once a marker request
# sent now is in the log, so is every request whose response a client had before it. OPTIONS is
# counted by none of the tallies here.
sync_log() {
  local marker="/__log_sync/$RANDOM$RANDOM"
  curl -s -o /dev/null -X OPTIONS "http://127.0.0.1:$PPORT$marker" || true
  for _ in $(seq 400); do grep -qF "OPTIONS $marker " "$ACCESS_LOG" && return 0; sleep 0.05; done
  echo "the proxy's access log never showed $marker" >&2; return 1
}
log_lines() { sync_log; wc -l < "$ACCESS_LOG"; }
seed_pass() {  # TOOL PHASE: `cat` of every seed file, one at a time, in listing order; sets S[TOOL,PHASE_s] and the requests
  local t l0; l0=$(log_lines); t=$(now)
  for f in "$MNT"/seed/*; do cat "$f" > /dev/null; done
  S[$1,$2_s]=$(elapsed "$t")
  read -r S[$1,$2_lists] S[$1,$2_heads] S[$1,$2_gets] < <(requests_since "$l0")
}
declare -A S
if [[ " $WORKLOADS " == *" seed "* ]]; then
  echo "== seed exercise: $SEED_N x $SEED_MB MiB, cat one file at a time (metadata TTL ${SEED_TTL}s)"
  rm -rf "$WORK/aws-seed"
  t=$(now)
  AWS_ACCESS_KEY_ID=$AK AWS_SECRET_ACCESS_KEY=$SK AWS_DEFAULT_REGION=us-east-1 \
    /usr/bin/aws --endpoint-url "$EP" s3 cp --quiet --recursive s3://bench/seed "$WORK/aws-seed"
  S[aws,cold_s]=$(elapsed "$t")
  echo "  aws s3 cp --recursive: ${S[aws,cold_s]}s"
  # The floor of any warm pass: the same `cat` loop over local copies in the page cache
  # (process start-up and copies only).
  for f in "$WORK/aws-seed"/*; do cat "$f" > /dev/null; done
  t=$(now)
  for f in "$WORK/aws-seed"/*; do cat "$f" > /dev/null; done
  S[floor,warm_s]=$(elapsed "$t")
  rm -rf "$WORK/aws-seed"
  echo "  the same cat loop over local files in the page cache: ${S[floor,warm_s]}s"
  for tool in $TOOLS; do
    mount_tool "$tool" "$SEED_TTL" || { echo "skipping $tool"; continue; }
    drop_caches
    ls "$MNT/seed" > /dev/null
    seed_pass "$tool" cold
    sleep $((SEED_TTL + 1))  # every TTL expired: the warm pass revalidates
    seed_pass "$tool" warm
    unmount_tool
    drop_caches
    mount_tool "$tool" "$SEED_TTL" keep || { echo "skipping $tool"; continue; }
    ls "$MNT/seed" > /dev/null
    seed_pass "$tool" remount
    unmount_tool
    printf '  %s: cold %ss  warm, same mount %ss  warm after remount %ss\n' "$tool" \
      "${S[$tool,cold_s]}" "${S[$tool,warm_s]}" "${S[$tool,remount_s]}"
    for ph in cold warm remount; do
      printf '    %-8s bucket requests: %s LIST, %s HEAD, %s GET\n' "$ph" \
        "${S[$tool,${ph}_lists]}" "${S[$tool,${ph}_heads]}" "${S[$tool,${ph}_gets]}"
    done
  done
  SARGS=""
  for k in "${!S[@]}"; do SARGS+="$k=${S[$k]} "; done
  $PY - "$OUT/mount_seed.json" "$SEED_N" "$SEED_MB" "$SEED_TTL" "$TTFB_MS" "$RATE" $SARGS <<'EOF'
import json, sys
out, n, mb, ttl, ttfb, rate = sys.argv[1:7]
raw = {}
for a in sys.argv[7:]:
    k, v = a.split("=")
    tool, metric = k.split(",")
    raw.setdefault(tool, {})[metric] = float(v)
aws = raw.get("aws", {}).get("cold_s")
floor = raw.get("floor", {}).get("warm_s")
print(f"\n{'seed exercise':14s}{'cold s':>9s}{'warm s':>9s}{'remount s':>11s}{'cold/aws':>10s}{'cold/warm':>11s}"
      f"{'cold/remount':>14s}")
ratios = {}
for tool, m in raw.items():
    if tool in ("aws", "floor") or not {"cold_s", "warm_s", "remount_s"} <= m.keys():
        continue
    r = {"cold_vs_aws": m["cold_s"] / aws if aws else None, "cold_over_warm": m["cold_s"] / m["warm_s"],
         "cold_over_remount": m["cold_s"] / m["remount_s"]}
    ratios[tool] = r
    print(f"{tool:14s}{m['cold_s']:9.2f}{m['warm_s']:9.2f}{m['remount_s']:11.2f}"
          f"{r['cold_vs_aws'] or 0:9.2f}x{r['cold_over_warm']:10.1f}x{r['cold_over_remount']:13.1f}x")
if aws:
    print(f"{'aws s3 cp':14s}{aws:9.2f}")
if floor:
    print(f"{'local cat':14s}{'':9s}{floor:9.2f}   (page cache: the floor of a warm pass)")
best_warm = {p: min((m[p] for t, m in raw.items() if t not in ("aws", "floor", "strata") and p in m), default=None)
             for p in ("warm_s", "remount_s")}
if "strata" in raw:
    for p, best in best_warm.items():
        if best and p in raw["strata"]:
            ratios.setdefault("strata", {})[f"{p[:-2]}_vs_best_other"] = best / raw["strata"][p]
            print(f"strata {p[:-2]}: {best / raw['strata'][p]:.2f}x the best other tool's")
phases = [("cold_s", "cold"), ("warm_s", "warm, same mount\n(TTLs expired)"), ("remount_s", "warm after remount")]
tools = [t for t in raw if t not in ("aws", "floor")]
charts = [{"title": f"seed exercise: {n} x {mb} MiB, cat one file at a time (lower is better)",
           "ylabel": "seconds", "groups": [label for _, label in phases],
           "series": [{"label": t, "values": [raw[t].get(p) for p, _ in phases]} for t in tools] +
                     ([{"label": "aws s3 cp --recursive", "values": [aws, None, None]}] if aws else []) +
                     ([{"label": "cat of local files (page cache)", "values": [None, floor, None]}] if floor else [])}]
if any(f"{p[:-2]}_lists" in m for m in raw.values() for p, _ in phases):
    charts.append({"title": "bucket requests per pass (LIST + HEAD + GET, from the proxy's log)", "ylabel": "requests",
                   "groups": [label for _, label in phases],
                   "series": [{"label": t, "values": [sum(raw[t].get(f"{p[:-2]}_{k}", 0) for k in ("lists", "heads", "gets"))
                                                      if p in raw[t] else None for p, _ in phases]} for t in tools]})
doc = {"title": f"strata mount vs s3fs vs rclone: seed exercise (ttfb {ttfb} ms, {rate}/s per connection)",
       "config": {"files": int(n), "file_mb": int(mb), "metadata_ttl_s": int(ttl), "ttfb_ms": int(ttfb),
                  "rate_per_connection": rate},
       "seconds": raw, "ratios": ratios, "charts": charts}
json.dump(doc, open(out, "w"), indent=2)
print(f"wrote {out}")
EOF
  plot "$OUT/mount_seed.json" "$OUT/mount_seed.png"
fi

# ---- report ----
[[ " $WORKLOADS " == *" main "* ]] || exit 0
ARGS=""
for k in "${!R[@]}"; do ARGS+="$k=${R[$k]} "; done
$PY - "$OUT/mount.json" "$SIZE_MB" "$NFILES" "$FILE_KB" "$NLIST" "$THREADS" "$TTFB_MS" "$RATE" "$TOOLS" $ARGS <<'EOF'
import json, sys
out, size_mb, nfiles, kb, nlist, threads, ttfb, rate, tools = sys.argv[1:10]
size_mb, nfiles, kb, nlist = int(size_mb), int(nfiles), int(kb), int(nlist)
raw = {}
for a in sys.argv[10:]:
    k, v = a.split("=")
    tool, metric = k.split(",")
    raw.setdefault(tool, {})[metric] = float(v)
mb = size_mb * 1048576 / 1e6
figures = {}
for tool, m in raw.items():
    figures[tool] = {
        "a_cold_seq_MBps": mb / m["cold_s"],
        "b_warm_reread_MBps": mb / m["warm_s"],
        "b2_warm_no_page_cache_MBps": mb / m["warm_nopc_s"],
        "c_small_files_per_s": nfiles / m["small_s"],
        "d_ls_lR_first_s": m["ls1_s"],
        "d_ls_lR_cached_s": m["ls2_s"],
        "d_find_cached_s": m["find_s"],
    }
higher = lambda k: not (k.endswith("_s") and not k.endswith("per_s"))
print(f"\n{'metric':30s}" + "".join(f"{t:>12s}" for t in figures) + "   strata vs best other")
ratios = {}
for k in next(iter(figures.values())).keys():
    row = f"{k:30s}" + "".join(f"{figures[t][k]:12.2f}" for t in figures)
    others = [figures[t][k] for t in figures if t != "strata"]
    if "strata" in figures and others:
        s = figures["strata"][k]
        best = max(others) if higher(k) else min(others)
        r = s / best if higher(k) else best / s
        ratios[k] = r
        row += f"   {r:6.2f}x {'(faster)' if r >= 1 else '(slower)'}"
    print(row)
names = list(figures)
def chart(title, ylabel, keys):
    return {"title": title, "ylabel": ylabel, "groups": [k for k, _ in keys],
            "series": [{"label": t, "values": [figures[t][k] for _, k in keys]} for t in names]}
charts = [
    chart(f"{size_mb} MiB file, dd bs=4M (higher is better)", "MB/s",
          [("cold", "a_cold_seq_MBps"), ("warm", "b_warm_reread_MBps"), ("warm, no page cache", "b2_warm_no_page_cache_MBps")]),
    chart(f"{nfiles} x {kb} KiB, {threads} threads, random order (higher is better)", "files/s",
          [("small files", "c_small_files_per_s")]),
    chart(f"{nlist} objects (lower is better)", "seconds",
          [("ls -lR first", "d_ls_lR_first_s"), ("ls -lR cached", "d_ls_lR_cached_s"), ("find cached", "d_find_cached_s")]),
]
doc = {"title": f"strata mount vs s3fs vs rclone (ttfb {ttfb} ms, {rate}/s per connection)",
       "config": {"size_mb": size_mb, "nfiles": nfiles, "file_kb": kb, "nlist": nlist, "threads": int(threads),
                  "ttfb_ms": int(ttfb), "rate_per_connection": rate, "tools": tools.split()},
       "figures": figures, "raw_seconds": raw, "strata_ratio_to_best_other": ratios, "charts": charts}
json.dump(doc, open(out, "w"), indent=2)
print(f"\nwrote {out}")
EOF
plot "$OUT/mount.json" "$OUT/mount.png"
echo "reproduce: SIZE_MB=$SIZE_MB NFILES=$NFILES FILE_KB=$FILE_KB NLIST=$NLIST THREADS=$THREADS TTFB_MS=$TTFB_MS RATE=$RATE TOOLS=\"$TOOLS\" STRATA=$STRATA $SRC/bench/mount_bench.sh"
