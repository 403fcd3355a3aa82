# Shared by scripts/rgw.sh, scripts/s3rver.sh and scripts/cloud-proxy.sh (sourced, not run).
# Daemons run in the foreground under setsid with their PID in $DIR/pids/NAME.pid; stopping
# signals exactly those PIDs, and only while their command line still contains $OWN_MARK
# (a path under $DIR), so a recycled PID is never hit.
#
# The caller sets: DIR (absolute), OWN_MARK, LOG_TAG.

log() { echo "$LOG_TAG: $*" >&2; }

# Everything here talks to 127.0.0.1 only: never through a proxy from the environment.
export NO_PROXY="127.0.0.1,localhost${NO_PROXY:+,$NO_PROXY}" no_proxy="127.0.0.1,localhost${no_proxy:+,$no_proxy}"

now_ms() { date +%s%3N; }

# free_ports [N]: N distinct free TCP ports on 127.0.0.1, below the kernel's ephemeral range (so no
# client's connect() takes one as its local port before the server binds it), all bound at once
# (a port closed and picked again could come back twice); racy only against other port pickers.
free_ports() {
  /usr/bin/python3 -c '
import random, socket, sys
n = int(sys.argv[1])
try:
    low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
except (OSError, ValueError, IndexError):
    low = 32768
socks = []
for _ in range(200 * n):
    if len(socks) == n:
        break
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", random.randrange(10000, low) if low > 11000 else 0))
        socks.append(s)
    except OSError:
        s.close()
print(" ".join(str(s.getsockname()[1]) for s in socks))' "${1:-1}"
}

# True if PID is alive, not a zombie, and its command line contains $OWN_MARK.
owned() {
  local pid=$1 state
  [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
  state=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) || return 1
  [ "$state" != Z ] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$OWN_MARK"
}

# spawn NAME CMD...: starts CMD in its own session (no fork: a background job of a script is
# never a process-group leader, so setsid execs in place and $! is the daemon's PID).
spawn() {
  local name=$1; shift
  setsid "$@" </dev/null >>"$DIR/log/$name.out" 2>&1 &
  echo $! >"$DIR/pids/$name.pid"
}

# True if any recorded daemon is already running (a second start would clash).
any_running() {
  local f
  for f in "$DIR"/pids/*.pid; do
    [ -e "$f" ] || continue
    owned "$(cat "$f")" && return 0
  done
  return 1
}

# cleanup_unless_ready STOPFN: if the script exits (error, signal) before it sets READY=1,
# STOPFN stops whatever was started, so a failed start leaves no daemons behind.
cleanup_unless_ready() {
  READY=0
  CLEANUP_FN=$1
  trap 'exit 129' HUP
  trap 'exit 130' INT
  trap 'exit 143' TERM
  trap '_on_exit' EXIT
}
_on_exit() {
  local rc=$?
  if [ "$READY" != 1 ]; then
    log "start failed; stopping what was started (logs in $DIR/log)"
    _last_errors
    "$CLEANUP_FN" || true
    [ "$rc" != 0 ] || rc=1
  fi
  exit "$rc"
}

# The daemons' last error lines, so a failed start says why where only its output is kept (CI).
_last_errors() {
  local f line
  for f in "$DIR"/log/*; do
    [ -f "$f" ] || continue
    line=$(grep -a -iE '(^| )(-1|error|fatal|failed)( |:)' "$f" 2>/dev/null | tail -2 | cut -c1-300) || true
    [ -z "$line" ] || log "$(basename "$f"): $line"
  done
}

phase() {  # phase NAME: records how long the phase that just ended took, for the ready line.
  local t; t=$(now_ms)
  PHASES+="$1 $((t - T_PHASE))ms, "
  T_PHASE=$t
}

# wait_for WHAT SECONDS CMD...: polls CMD until it succeeds; fails at the deadline or as soon
# as a recorded daemon dies.
wait_for() {
  local what=$1 secs=$2 f; shift 2
  local deadline=$(( $(now_ms) + secs * 1000 ))
  until "$@" >/dev/null 2>&1; do
    if [ "$(now_ms)" -ge "$deadline" ]; then log "timed out after ${secs}s waiting for $what"; return 1; fi
    for f in "$DIR"/pids/*.pid; do
      [ -e "$f" ] || continue
      owned "$(cat "$f")" || { log "$(basename "$f" .pid) died; see $DIR/log/"; return 1; }
    done
    sleep 0.05
  done
}

# stop_pids NAME...: TERM the recorded daemons NAME..., KILL those still alive after 10 s.
stop_pids() {
  local name pid deadline
  local pids=() alive
  for name in "$@"; do
    [ -e "$DIR/pids/$name.pid" ] || continue
    pid=$(cat "$DIR/pids/$name.pid")
    if owned "$pid"; then pids+=("$pid"); fi
  done
  if [ ${#pids[@]} -gt 0 ]; then
    kill -TERM "${pids[@]}" 2>/dev/null || true
    deadline=$(( $(now_ms) + 10000 ))
    while :; do
      alive=()
      for pid in "${pids[@]}"; do owned "$pid" && alive+=("$pid"); done
      [ ${#alive[@]} -eq 0 ] && break
      if [ "$(now_ms)" -ge "$deadline" ]; then
        log "still alive 10 s after TERM, sending KILL: ${alive[*]}"
        kill -KILL "${alive[@]}" 2>/dev/null || true
        deadline=$(( $(now_ms) + 5000 ))
      fi
      sleep 0.05
    done
  fi
  for name in "$@"; do rm -f "$DIR/pids/$name.pid"; done
}

# s3 METHOD PATH [curl args...]: a SigV4-signed request (needs ENDPOINT, REGION, keys).
s3() {
  local method=(-X "$1") path=$2; shift 2
  [ "${method[1]}" != HEAD ] || method=(--head)  # -X HEAD would wait for a body
  curl -sS -f -o /dev/null --max-time 5 "${method[@]}" -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" \
    --aws-sigv4 "aws:amz:$REGION:s3" --user "$ACCESS_KEY:$SECRET_KEY" "$@" "$ENDPOINT$path"
}

# write_env: prints the connection lines and writes them atomically to $DIR/env.
write_env() {
  {
    echo "endpoint=$ENDPOINT"
    echo "access_key=$ACCESS_KEY"
    echo "secret_key=$SECRET_KEY"
    echo "bucket=$BUCKET"
    echo "region=$REGION"
  } >"$DIR/env.tmp"
  mv "$DIR/env.tmp" "$DIR/env"
  cat "$DIR/env"
}
