#!/usr/bin/env bash
# Proves the locking annotations (base/mutex.h: GUARDED_BY, REQUIRES) of the classes that hold
# locks: clang's -Wthread-safety over their translation units, with the include paths and
# defines of BUILD_DIR/compile_commands.json, syntax only (no code generated: seconds).
# The main build uses gcc, where the annotations are empty; this is what checks them.
#
#   scripts/thread_safety.sh [BUILD_DIR]    (default build/; needs clang++-14 and a configure)
#
# Exits non-zero if any file has a thread-safety error (or does not compile under clang).
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
CLANG=${STRATA_CLANG:-clang++-14}
JOBS=${STRATA_JOBS:-$(nproc)}

# The annotated translation units: add a file here when its class is annotated.
FILES=(
  src/base/buffer_pool.cc src/base/metrics.cc
  src/cache/block_cache.cc src/cache/ram_tier.cc src/cache/disk_tier.cc src/cache/cached_store.cc
  src/cache/cached_store_meta.cc src/cache/meta_journal.cc src/cache/frequency_sketch.cc
  src/fs/inode_table.cc src/fs/write_buffers.cc src/fs/bounded_reads.cc src/fs/object_fs.cc src/fs/object_fs_list.cc
  src/fs/object_fs_attr.cc src/fs/object_fs_names.cc src/fs/object_fs_io.cc src/fs/object_fs_prefetch.cc
  src/loader/shard_cache.cc src/loader/pipeline.cc src/loader/streaming_dataset.cc
  src/object/file_store.cc src/object/mem_store.cc src/object/s3_store.cc src/object/transfer.cc
  src/net/http_client.cc src/net/connection_table.cc
  src/ckpt/writer.cc src/ckpt/tiering.cc src/ckpt/staging.cc src/ckpt/location.cc
  src/gateway/buckets.cc src/gateway/bucket_records.cc src/gateway/observer.cc
  src/gateway/server.cc
  src/group/cache_group.cc src/group/etcd_membership.cc src/group/peer_server.cc src/group/member.cc
  src/group/group_store.cc src/group/etcd_client.cc
  src/csi/node.cc
)

command -v "$CLANG" >/dev/null || { echo "$CLANG not found"; exit 1; }
[ -f "$BUILD/compile_commands.json" ] || { echo "no $BUILD/compile_commands.json (configure first)"; exit 1; }

# One line per file: its -D/-I/-isystem/-std flags from the compile database.
flags() {
  /usr/bin/python3 - "$BUILD/compile_commands.json" "$PWD" "$@" <<'PY'
import json, shlex, sys
db, root, files = sys.argv[1], sys.argv[2], sys.argv[3:]
by_file = {e["file"]: e for e in json.load(open(db))}
for f in files:
    e = by_file.get(f"{root}/{f}")
    if e is None:
        print(f"{f}\tMISSING")
        continue
    args = e.get("arguments") or shlex.split(e["command"])
    keep, i = [], 0
    while i < len(args):
        a = args[i]
        if a in ("-I", "-isystem", "-D", "-include"):
            keep += [a, args[i + 1]]; i += 2; continue
        if a.startswith(("-I", "-D", "-std=", "-isystem")):
            keep.append(a)
        i += 1
    print(f + "\t" + " ".join(shlex.quote(k) for k in keep))
PY
}

check_one() {  # check_one FILE FLAGS
  local f=$1 fl=$2
  if [ "$fl" = MISSING ]; then echo "$f: not in the compile database"; return 1; fi
  # shellcheck disable=SC2086
  eval "$CLANG" -fsyntax-only -Wthread-safety -Werror=thread-safety $fl "$f" 2>&1 || {
    echo "$f: FAILED"; return 1; }
}
export -f check_one
export CLANG

t0=$(date +%s)
if flags "${FILES[@]}" | tr '\t' '\n' | xargs -d '\n' -n 2 -P "$JOBS" bash -c 'check_one "$0" "$1"'; then
  echo "thread-safety: ${#FILES[@]} files clean ($(( $(date +%s) - t0 ))s)"
  exit 0
fi
echo "thread-safety: FAILED"
exit 1
