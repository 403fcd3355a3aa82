#!/usr/bin/env bash
# Installs everything strata needs to build, test and benchmark on Debian 12.
# Idempotent; safe to re-run. Needs root (or sudo) for apt.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive

PACKAGES=(
  # build
  build-essential cmake ninja-build ccache pkg-config clang-14 libclang-rt-14-dev clang-format
  # libraries
  libcurl4-openssl-dev libssl-dev libboost1.81-dev libfuse3-dev fuse3 libzstd-dev liburing-dev
  libxxhash-dev libcli11-dev nlohmann-json3-dev libspdlog-dev libfmt-dev libgtest-dev libgmock-dev
  libbenchmark-dev pybind11-dev python3-dev libexpat1-dev libyaml-dev
  # python side (Debian's /usr/bin/python3)
  python3-torch python3-numpy python3-pytest python3-boto3 python3-matplotlib
  # real S3 servers and clients for integration tests and benchmarks
  radosgw ceph-mon ceph-osd uuid-runtime awscli s3cmd rclone s3fs fio rsync
  nginx-light libnginx-mod-http-lua iperf3 curl procps psmisc
  # cache-group membership (src/group: etcd's v3 HTTP/JSON gateway)
  etcd-server
  # the CSI driver (src/csi: gRPC from Debian) and its Python test clients and manifest checks
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc python3-grpcio python3-protobuf
  python3-yaml util-linux
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# Node.js/npm: use the machine's if present (Debian's nodejs conflicts with other builds).
if ! command -v npm >/dev/null 2>&1; then
  $SUDO apt-get install -y -q --no-install-recommends nodejs npm
fi

# s3rver: the quick fake S3 server, kept inside the repo's tools dir.
if [ ! -x tools/node_modules/.bin/s3rver ]; then
  mkdir -p tools
  (cd tools && npm install --no-audit --no-fund --loglevel=error s3rver@3.7.1)
fi
echo "setup: ok"
