#!/usr/bin/env bash
# The download benchmark: starts Ceph RGW and, in front of it, the nginx cloud-emulating proxy
# (30 ms per request, 25 MiB/s per connection), puts one object, and downloads it with strata's
# parallel ranged GET and with `aws s3 cp` through both. Writes bench/out/download.json + .png.
#
#   bash bench/download_bench.sh [--size-mib N] [--concurrency N] [--runs N] [--build-dir DIR]
#
# Every process it starts (RGW's mon/osd/radosgw, nginx) is stopped by PID on exit.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR="$ROOT/build"
SIZE_MIB=1024
EXTRA=()
ARGS=("$@")
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) BUILD_DIR=$(realpath "$2"); shift 2 ;;
    --size-mib) SIZE_MIB=$2; shift 2 ;;
    --concurrency|--runs|--part-size-mib) EXTRA+=("$1" "$2"); shift 2 ;;
    -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
    *) echo "download_bench.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

BENCH="$BUILD_DIR/bench/download_bench"
if [ ! -x "$BENCH" ]; then
  echo "building download_bench in $BUILD_DIR ..." >&2
  [ -f "$BUILD_DIR/build.ninja" ] || cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release >&2
  ninja -C "$BUILD_DIR" download_bench >&2
fi
for tool in /usr/bin/aws nginx; do
  command -v "$tool" >/dev/null || { echo "download_bench.sh: $tool not found: run scripts/setup.sh" >&2; exit 1; }
done

WORK=$(mktemp -d "${TMPDIR:-/tmp}/strata-download-bench-XXXXXX")
cleanup() {
  bash "$ROOT/scripts/cloud-proxy.sh" stop "$WORK/proxy" >/dev/null 2>&1 || true
  bash "$ROOT/scripts/rgw.sh" stop "$WORK/rgw" >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "starting Ceph RGW ..."
bash "$ROOT/scripts/rgw.sh" start "$WORK/rgw" >"$WORK/rgw.env"
# shellcheck disable=SC1091
. "$WORK/rgw.env"
PROXY_PORT=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
echo "starting the cloud-emulating proxy (nginx: 30 ms per request, 25 MiB/s per connection) ..."
bash "$ROOT/scripts/cloud-proxy.sh" start "$WORK/proxy" "$PROXY_PORT" "$endpoint" --ttfb-ms 30 --rate 25m >/dev/null

export AWS_ACCESS_KEY_ID="$access_key" AWS_SECRET_ACCESS_KEY="$secret_key" AWS_REGION="$region"
unset AWS_SESSION_TOKEN AWS_PROFILE
mkdir -p "$ROOT/bench/out"
"$BENCH" --target "rgw-loopback=$endpoint" --target "cloud-proxy=http://127.0.0.1:$PROXY_PORT" \
  --bucket "$bucket" --region "$region" --size-mib "$SIZE_MIB" "${EXTRA[@]}" --work-dir "$WORK" \
  --out "$ROOT/bench/out/download.json" --plot-script "$ROOT/bench/plot.py" \
  --repro "bash bench/download_bench.sh ${ARGS[*]}"
