#!/usr/bin/env bash
# A throwaway s3rver (npm, tools/node_modules) on 127.0.0.1: quick, but a fake (see
# shared/notes/s3-servers.md: its signature checking and several APIs are unreliable).
#
#   scripts/s3rver.sh start DIR [PORT]   -> prints endpoint=, access_key=, secret_key=, bucket=, region=
#                                           (also written to DIR/env); PORT defaults to a free one
#   scripts/s3rver.sh stop DIR           -> stops exactly the process recorded in DIR/pids/
#
# Objects are plain files under DIR/data; everything else (logs, pid) is under DIR too.
set -euo pipefail

usage() { echo "usage: $0 start DIR [PORT] | stop DIR" >&2; exit 2; }

stop_server() {
  [ -d "$DIR/pids" ] || return 0
  stop_pids s3rver
}

start() {
  local t0; t0=$(now_ms)
  PHASES=""
  T_PHASE=$t0
  local root; root=$(cd "$(dirname "$0")/.." && pwd)
  local js="$root/tools/node_modules/s3rver/bin/s3rver.js"
  [ -f "$js" ] || { log "$js not found: run scripts/setup.sh"; exit 1; }
  command -v node >/dev/null || { log "node not found: run scripts/setup.sh"; exit 1; }
  if any_running; then log "$DIR already has a running s3rver (stop it first)"; exit 1; fi
  rm -rf "$DIR/data" "$DIR/log"
  mkdir -p "$DIR"/{data,log,pids}
  PORT=${PORT:-$(free_ports 1)}
  ACCESS_KEY=S3RVER  # s3rver's one built-in account
  SECRET_KEY=S3RVER
  BUCKET=strata-test
  REGION=us-east-1
  ENDPOINT="http://127.0.0.1:$PORT"

  cleanup_unless_ready stop_server
  # --openssl-legacy-provider: without it ListObjectsV2 continuation tokens (des-ede3 in
  # s3rver) fail with HTTP 500 on Node >= 17.
  spawn s3rver node --openssl-legacy-provider "$js" -d "$DIR/data" -a 127.0.0.1 -p "$PORT" \
    --no-vhost-buckets --configure-bucket "$BUCKET"
  wait_for "s3rver on $ENDPOINT" 30 s3 HEAD "/$BUCKET"
  phase "bucket ready"
  wait_for "first PUT" 10 s3 PUT "/$BUCKET/.strata-ready" --data-binary ready
  s3 DELETE "/$BUCKET/.strata-ready"
  phase "first put"
  READY=1

  write_env
  log "ready in $(( $(now_ms) - t0 )) ms (${PHASES%, }; pid $(cat "$DIR/pids/s3rver.pid"))"
}

[ $# -ge 2 ] || usage
CMD=$1
[ "$CMD" = start ] && mkdir -p "$2"
[ -d "$2" ] || exit 0  # stop: nothing was ever started there
DIR=$(cd "$2" && pwd)
PORT=${3:-}
OWN_MARK="$DIR/data"
LOG_TAG=s3rver.sh
# shellcheck source=scripts/daemon-lib.sh
source "$(dirname "$0")/daemon-lib.sh"
case "$CMD" in
  start) start ;;
  stop) stop_server ;;
  *) usage ;;
esac
