#!/usr/bin/env bash
# A throwaway one-node Ceph cluster (1 mon, 1 memstore OSD, radosgw/beast) on 127.0.0.1.
#
#   scripts/rgw.sh start DIR [PORT]   -> prints endpoint=, access_key=, secret_key=, bucket=, region=
#                                        (also written to DIR/env); PORT defaults to a free one
#   scripts/rgw.sh stop DIR           -> stops exactly the daemons recorded in DIR/pids/
#
# All state (conf, keyrings, data, logs, pid files, admin sockets) lives under DIR; nothing is
# installed or started system-wide. Data lives in RAM (memstore) and is gone after stop.
set -euo pipefail

usage() { echo "usage: $0 start DIR [PORT] | stop DIR" >&2; exit 2; }

# Gateway, then OSD, then mon: each still has the ones below it while shutting down (else
# each waits seconds for a peer that is gone).
stop_cluster() {
  [ -d "$DIR/pids" ] || return 0
  stop_pids rgw
  stop_pids osd
  stop_pids mon
}

# write_keyring FILE ENTITY CAP...: a keyring with a fresh cephx key. The key is what
# "ceph-authtool --gen-print-key" makes: base64 of type 1 (AES), creation time (u32 s,
# u32 ns), length 16, then 16 random bytes.
write_keyring() {
  local file=$1 entity=$2 t key cap; shift 2
  t=$(date +%s)
  key=$({ printf '\x01\x00'
          printf "$(printf '\\x%02x\\x%02x\\x%02x\\x%02x' $((t & 255)) $((t >> 8 & 255)) $((t >> 16 & 255)) $((t >> 24 & 255)))"
          printf '\x00\x00\x00\x00\x10\x00'
          head -c 16 /dev/urandom; } | base64 -w0)
  { echo "[$entity]"
    echo "	key = $key"
    for cap in "$@"; do echo "	caps $cap"; done
  } >"$file"
}

start() {
  local t0; t0=$(now_ms)
  PHASES=""
  T_PHASE=$t0
  for bin in ceph-mon ceph-osd monmaptool radosgw radosgw-admin curl base64; do
    command -v "$bin" >/dev/null || { log "$bin not found: run scripts/setup.sh"; exit 1; }
  done
  if any_running; then log "$DIR already has a running cluster (stop it first)"; exit 1; fi
  rm -rf "$DIR/mon" "$DIR/osd" "$DIR/rgw" "$DIR/run" "$DIR/log"
  mkdir -p "$DIR"/{mon/a,osd/0,rgw,run,log,pids}
  local ports; ports=($(free_ports 2))
  PORT=${PORT:-${ports[0]}}
  local mon_port=${ports[1]}
  [ "$mon_port" != "$PORT" ] || mon_port=${ports[0]}
  local fsid; fsid=$(uuidgen)
  local osd_uuid; osd_uuid=$(uuidgen)
  ACCESS_KEY=$(tr -dc 'A-Z0-9' </dev/urandom | head -c 20 || true)
  SECRET_KEY=$(tr -dc 'A-Za-z0-9' </dev/urandom | head -c 40 || true)
  BUCKET=strata-test
  REGION=us-east-1
  ENDPOINT="http://127.0.0.1:$PORT"
  CONF="$DIR/ceph.conf"

  cat >"$CONF" <<EOF
[global]
fsid = $fsid
mon host = v2:127.0.0.1:$mon_port
mon initial members = a
public addr = 127.0.0.1
cluster addr = 127.0.0.1
ms bind ipv6 = false
auth cluster required = cephx
auth service required = cephx
auth client required = cephx
run dir = $DIR/run
admin socket = $DIR/run/\$name.asok
pid file = $DIR/run/\$name.pid
log file = $DIR/log/\$name.log
log to stderr = false
err to stderr = true
crash dir = $DIR/run/crash
mon cluster log file = $DIR/log/cluster.log
# One OSD: single replicas, no host failure domain, few PGs, no autoscaler (no mgr).
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
osd crush chooseleaf type = 0
mon allow pool size one = true
mon allow pool delete = true
mon warn on pool no redundancy = false
mon max pg per osd = 1000
# Each pool RGW creates costs a paxos round: make rounds fast.
paxos propose interval = 0.1
paxos min wait = 0.01
mon osd reporter subtree level = osd
# The mon refuses to start, or shuts down, when its file system has 5% free or less (CI's
# disk once had less while the TSan build grew; 0 still refuses below 1%): a test mon holds a few MB.
mon data avail crit = -1
osd objectstore = memstore
memstore device bytes = 8589934592
osd fast shutdown = true
osd op num shards = 2
osd op num threads per shard = 1
# Serving CPU halves (1.2-1.7 -> 0.7-0.9 CPU s per GiB read, measured with curl on this 2-core
# machine) without in-memory debug logs and with no CRCs on loopback messages: benchmarks
# through RGW then measure the client, not RGW's bookkeeping.
debug rgw = 0/0
debug ms = 0/0
debug osd = 0/0
debug objecter = 0/0
debug rados = 0/0
debug memstore = 0/0
ms crc data = false
ms crc header = false

[mon.a]
mon data = $DIR/mon/a
keyring = $DIR/mon.keyring

[osd.0]
osd data = $DIR/osd/0
keyring = $DIR/osd/0/keyring

[client.admin]
keyring = $DIR/admin.keyring

[client.rgw]
keyring = $DIR/rgw.keyring
rgw data = $DIR/rgw
rgw frontends = beast endpoint=127.0.0.1:$PORT
rgw dns name = 127.0.0.1
rgw enable usage log = false
# Lifecycle workers sleep 5 s at a time and delay shutdown; tests need no lifecycle.
rgw enable lc threads = false
rgw thread pool size = 64
# 16 MiB RADOS stripes: a quarter of the OSD round trips per large GET (default 4 MiB).
rgw max chunk size = 16777216
EOF

  cleanup_unless_ready stop_cluster

  # Keys: every entity with its caps goes into the mon keyring, so mkfs imports them all
  # and no "ceph auth" round trips are needed later. Written directly: each ceph-authtool
  # run costs 0.2-0.6 s of library loading.
  write_keyring "$DIR/admin.keyring" client.admin \
    'mon = "allow *"' 'osd = "allow *"' 'mds = "allow *"' 'mgr = "allow *"'
  write_keyring "$DIR/rgw.keyring" client.rgw 'mon = "allow rw"' 'osd = "allow rwx"' 'mgr = "allow rw"'
  write_keyring "$DIR/osd/0/keyring" osd.0 \
    'mon = "allow profile osd"' 'osd = "allow *"' 'mgr = "allow profile osd"'
  write_keyring "$DIR/mon.keyring" mon. 'mon = "allow *"'
  cat "$DIR/admin.keyring" "$DIR/rgw.keyring" "$DIR/osd/0/keyring" >>"$DIR/mon.keyring"

  # Both stores at once.
  { monmaptool --create --addv a "[v2:127.0.0.1:$mon_port]" --fsid "$fsid" "$DIR/monmap" &&
    ceph-mon --mkfs -i a -c "$CONF" --monmap "$DIR/monmap" --keyring "$DIR/mon.keyring"; } \
    >>"$DIR/log/mkfs-mon.out" 2>&1 &
  local mon_mkfs=$!
  ceph-osd --mkfs -i 0 -c "$CONF" --no-mon-config --osd-uuid "$osd_uuid" >>"$DIR/log/mkfs-osd.out" 2>&1 \
    || { log "ceph-osd --mkfs failed: $(tail -3 "$DIR/log/mkfs-osd.out")"; wait "$mon_mkfs"; return 1; }
  wait "$mon_mkfs" || { log "ceph-mon --mkfs failed: $(tail -3 "$DIR/log/mkfs-mon.out")"; return 1; }
  phase mkfs
  spawn mon ceph-mon -f -i a -c "$CONF"
  # Registers osd.0 (its key is already known) through librados: the "ceph" CLI would
  # spend 1-2 s just starting.
  timeout 30 /usr/bin/python3 - "$CONF" "$osd_uuid" >>"$DIR/log/setup.out" 2>&1 <<'PY'
import json, sys, rados
cluster = rados.Rados(conffile=sys.argv[1], name="client.admin")
cluster.connect(timeout=25)
ret, out, err = cluster.mon_command(json.dumps({"prefix": "osd new", "uuid": sys.argv[2], "id": 0}), b"")
print(ret, out, err)
sys.exit(0 if ret == 0 else 1)
PY
  phase "osd new"
  spawn osd ceph-osd -f -i 0 -c "$CONF"
  # Not earlier: ops the gateway sends before the OSD exists are only retried on the
  # objecter's 5 s tick.
  spawn rgw radosgw -f -n client.rgw -c "$CONF"

  # Any HTTP answer means the gateway finished its start-up; creating the user before that
  # races with it and can stall radosgw-admin for seconds.
  wait_for "the gateway on $ENDPOINT" 40 curl -s -o /dev/null --max-time 2 "$ENDPOINT/"
  phase "gateway up"
  # The user goes in through RADOS directly (radosgw-admin tells the gateway).
  wait_for "radosgw-admin user create" 30 \
    timeout 20 radosgw-admin -c "$CONF" -n client.admin user create --uid=strata \
      --display-name=strata --access-key="$ACCESS_KEY" --secret="$SECRET_KEY"
  phase "user create"
  wait_for "bucket creation on $ENDPOINT" 20 s3 PUT "/$BUCKET"
  phase "create bucket"
  # The first object write creates the data pool; do it now so tests don't pay for it.
  wait_for "first PUT" 20 s3 PUT "/$BUCKET/.strata-ready" --data-binary ready
  s3 DELETE "/$BUCKET/.strata-ready"
  phase "first put"
  READY=1

  write_env
  log "ready in $(( $(now_ms) - t0 )) ms (${PHASES%, }; mon port $mon_port, pids $(cat "$DIR"/pids/*.pid | tr '\n' ' '))"
}

[ $# -ge 2 ] || usage
CMD=$1
[ "$CMD" = start ] && mkdir -p "$2"
[ -d "$2" ] || exit 0  # stop: nothing was ever started there
DIR=$(cd "$2" && pwd)
PORT=${3:-}
OWN_MARK="$DIR/ceph.conf"
LOG_TAG=rgw.sh
# shellcheck source=scripts/daemon-lib.sh
source "$(dirname "$0")/daemon-lib.sh"
unset CEPH_ARGS CEPH_CONF
case "$CMD" in
  start) start ;;
  stop) stop_cluster ;;
  *) usage ;;
esac
