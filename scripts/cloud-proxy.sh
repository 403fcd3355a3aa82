#!/usr/bin/env bash
# Makes a local S3 server look like a cloud bucket: nginx on 127.0.0.1:PORT forwarding to
# UPSTREAM, sleeping TTFB before each request and capping each connection's response rate.
#
#   scripts/cloud-proxy.sh start DIR PORT UPSTREAM [--ttfb-ms 30] [--rate 25m] [--access-log]
#   scripts/cloud-proxy.sh stop DIR
#   scripts/cloud-proxy.sh start DIR        (again after stop: same port, upstream and options)
#
# UPSTREAM is http://HOST:PORT (or HOST:PORT). --rate takes nginx sizes per second (25m = 25 MiB/s,
# 0 = no cap); --ttfb-ms 0 turns the delay off. The Host header is passed through unchanged,
# so SigV4 requests signed for the proxy's address verify at the upstream. nginx runs as its
# own master (foreground, under setsid) with its conf, pid, logs and temp files under DIR.
# A restart (stop DIR, then start DIR) keeps the port, so clients see a backend that refused
# connections and came back; the logs of every run in DIR accumulate.
set -euo pipefail

usage() {
  echo "usage: $0 start DIR PORT UPSTREAM [--ttfb-ms N] [--rate SIZE] [--access-log] | start DIR | stop DIR" >&2
  exit 2
}

# The master is the recorded PID; its workers share its process group (setsid made it the
# leader), so after the master is gone any straggler in that group is killed too.
stop_proxy() {
  [ -e "$DIR/pids/nginx.pid" ] || return 0
  local pgid; pgid=$(cat "$DIR/pids/nginx.pid")
  local was_ours=0
  owned "$pgid" && was_ours=1
  stop_pids nginx
  if [ "$was_ours" = 1 ]; then
    local p
    for p in $(pgrep -g "$pgid" 2>/dev/null || true); do
      tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -q '^nginx: ' && kill -KILL "$p" 2>/dev/null || true
    done
  fi
}

port_free() {  # port_free PORT: whether nginx could bind 127.0.0.1:PORT now.
  /usr/bin/python3 -c '
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))' "$1"
}

find_module() {  # find_module FILE: where Debian put a dynamic nginx module.
  local d
  for d in /usr/lib/nginx/modules /usr/share/nginx/modules; do
    [ -f "$d/$1" ] && { echo "$d/$1"; return 0; }
  done
  log "nginx module $1 not found: run scripts/setup.sh (libnginx-mod-http-lua)"
  return 1
}

start() {
  local t0; t0=$(now_ms)
  PHASES=""
  T_PHASE=$t0
  if [ $# -eq 0 ]; then  # a restart: the arguments of the last start in DIR
    [ -s "$DIR/start.args" ] || { log "$DIR was never started: give PORT and UPSTREAM"; usage; }
    local saved; mapfile -t saved <"$DIR/start.args"
    set -- "${saved[@]}"
  fi
  [ $# -ge 2 ] || usage
  local args=("$@")
  PORT=$1 UPSTREAM=$2; shift 2
  local ttfb_ms=30 rate=25m access_log=off
  while [ $# -gt 0 ]; do
    case "$1" in
      --ttfb-ms) ttfb_ms=${2:?}; shift 2 ;;
      --rate) rate=${2:?}; shift 2 ;;
      --access-log) access_log="$DIR/log/access.log"; shift ;;
      *) usage ;;
    esac
  done
  [[ "$PORT" =~ ^[0-9]+$ ]] || { log "bad PORT '$PORT'"; exit 2; }
  [[ "$ttfb_ms" =~ ^[0-9]+$ ]] || { log "bad --ttfb-ms '$ttfb_ms' (whole milliseconds)"; exit 2; }
  [[ "$rate" =~ ^[0-9]+[kKmMgG]?$ ]] || { log "bad --rate '$rate' (e.g. 25m, 800k, 0)"; exit 2; }
  local upstream=${UPSTREAM#http://}
  upstream=${upstream%/}
  [[ "$upstream" =~ ^[A-Za-z0-9.-]+:[0-9]+$ ]] || { log "bad UPSTREAM '$UPSTREAM' (want http://HOST:PORT)"; exit 2; }
  command -v nginx >/dev/null || { log "nginx not found: run scripts/setup.sh"; exit 1; }
  if any_running; then log "$DIR already has a running proxy (stop it first)"; exit 1; fi
  rm -f "$DIR/pids/nginx.pid"  # a crashed run's (not ours any more, or wait_for would see it die)

  rm -rf "$DIR/tmp" "$DIR/run"
  mkdir -p "$DIR"/{tmp,log,run,pids}
  # Validated above: one argument per line, none with a newline.
  printf '%s\n' "${args[@]}" >"$DIR/start.args.tmp" && mv "$DIR/start.args.tmp" "$DIR/start.args"
  local load_lua="" ttfb_block=""
  if [ "$ttfb_ms" -gt 0 ]; then
    load_lua="load_module $(find_module ndk_http_module.so);
load_module $(find_module ngx_http_lua_module.so);"
    local secs; secs=$(printf '%d.%03d' $((ttfb_ms / 1000)) $((ttfb_ms % 1000)))
    ttfb_block="access_by_lua_block { ngx.sleep($secs) }"
  fi
  # Bytes per second as a number, to size nginx's write buffers at ~10 ms of data.
  local rate_bytes=${rate%[kKmMgG]} mult=1
  case "$rate" in *[kK]) mult=1024 ;; *[mM]) mult=1048576 ;; *[gG]) mult=1073741824 ;; esac
  rate_bytes=$((rate_bytes * mult))
  local buffer=$((rate_bytes / 100))
  [ "$buffer" -ge 65536 ] || buffer=65536
  [ "$buffer" -le 8388608 ] || buffer=8388608
  local user=""
  # As root nginx would hand its workers to "nobody", who cannot enter a private DIR.
  [ "$(id -u)" != 0 ] || user="user root;"
  local template; template="$(cd "$(dirname "$0")" && pwd)/cloud-proxy.nginx.conf.in"
  local conf="$DIR/nginx.conf"
  LOAD_LUA=$load_lua USER_LINE=$user DIR_V=$DIR ACCESS_LOG=$access_log UPSTREAM_V=$upstream \
  PORT_V=$PORT TTFB_BLOCK=$ttfb_block RATE=$rate BUFFER=$buffer BUSY=$((2 * buffer)) /usr/bin/python3 - "$template" "$conf" <<'PY'
import os, sys
s = open(sys.argv[1]).read()
for k, v in {"@LOAD_LUA@": "LOAD_LUA", "@USER@": "USER_LINE", "@DIR@": "DIR_V",
             "@ACCESS_LOG@": "ACCESS_LOG", "@UPSTREAM@": "UPSTREAM_V", "@PORT@": "PORT_V",
             "@TTFB_BLOCK@": "TTFB_BLOCK", "@RATE@": "RATE", "@BUFFER@": "BUFFER", "@BUSY@": "BUSY"}.items():
    s = s.replace(k, os.environ[v])
open(sys.argv[2], "w").write(s)
PY
  nginx -t -q -e "$DIR/log/error.log" -p "$DIR" -c "$conf" 2>"$DIR/log/check.out" || {
    log "nginx rejected $conf:"; cat "$DIR/log/check.out" >&2; exit 1; }

  cleanup_unless_ready stop_proxy
  # On a restart the port may still be held for a moment (the old master's last exit steps,
  # or a client's socket that took it as its local port): nginx retries bind() for only
  # ~2.5 s, so wait until a bind like its own (SO_REUSEADDR) succeeds.
  wait_for "127.0.0.1:$PORT to be free" 20 port_free "$PORT"
  spawn nginx nginx -e "$DIR/log/error.log" -p "$DIR" -c "$conf"
  # Any HTTP status means nginx is accepting (the upstream may still answer 403 or 502).
  wait_for "nginx on 127.0.0.1:$PORT" 20 curl -s -o /dev/null --max-time 2 "http://127.0.0.1:$PORT/"
  READY=1
  echo "endpoint=http://127.0.0.1:$PORT"
  echo "endpoint=http://127.0.0.1:$PORT" >"$DIR/env"
  log "ready in $(( $(now_ms) - t0 )) ms (ttfb ${ttfb_ms} ms, rate $rate/s per connection, upstream $upstream, pid $(cat "$DIR/pids/nginx.pid"))"
}

[ $# -ge 2 ] || usage
CMD=$1
[ "$CMD" = start ] && mkdir -p "$2"
[ -d "$2" ] || exit 0  # stop: nothing was ever started there
DIR=$(cd "$2" && pwd)
shift 2
OWN_MARK="$DIR/nginx.conf"
LOG_TAG=cloud-proxy.sh
# shellcheck source=scripts/daemon-lib.sh
source "$(dirname "$0")/daemon-lib.sh"
case "$CMD" in
  start) start "$@" ;;
  stop) stop_proxy ;;
  *) usage ;;
esac
