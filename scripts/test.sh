#!/usr/bin/env bash
# The test command (CI runs it through .ci/run):
#
#   scripts/test.sh              setup, build (build/, RelWithDebInfo, -Werror), ctest labels unit,
#                                integration, fuse (+ stress with STRATA_STRESS=1), then the
#                                libFuzzer targets (build-fuzz/, clang-14) on their seed corpora;
#                                before the build, clang's -Wthread-safety over the annotated
#                                modules (scripts/thread_safety.sh, syntax only)
#   scripts/test.sh --sanitize   setup, build in build-sanitize/ (ASan+UBSan), unit tests there
#   scripts/test.sh --tsan       setup, build in build-tsan/ (ThreadSanitizer), unit and integration
#                                tests there; on demand only (too slow for CI: see README, Reliability)
#
# Environment: STRATA_STRESS=1 adds the stress label; STRATA_FUZZ_SECONDS (default 5) per
# fuzz target; STRATA_JOBS (default: cores) build/unit-test parallelism; STRATA_BUILD_DIR,
# STRATA_FUZZ_BUILD_DIR, STRATA_SANITIZE_BUILD_DIR, STRATA_TSAN_BUILD_DIR override the build dirs.
# Never reads stdin. Exits non-zero if any step failed; the last line is a one-line summary.
set -uo pipefail
cd "$(dirname "$0")/.."
exec </dev/null
export CI=${CI:-true}

MODE=default
case "${1:-}" in
  "") ;;
  --sanitize) MODE=sanitize ;;
  --tsan) MODE=tsan ;;
  -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
  *) echo "usage: $0 [--sanitize|--tsan]" >&2; exit 2 ;;
esac

JOBS=${STRATA_JOBS:-$(nproc)}
FUZZ_SECONDS=${STRATA_FUZZ_SECONDS:-5}
BUILD=${STRATA_BUILD_DIR:-build}
BUILD_FUZZ=${STRATA_FUZZ_BUILD_DIR:-build-fuzz}
BUILD_SANITIZE=${STRATA_SANITIZE_BUILD_DIR:-build-sanitize}
BUILD_TSAN=${STRATA_TSAN_BUILD_DIR:-build-tsan}
T_START=$(date +%s)
SUMMARY=()   # "step: result" entries for the final line
FAILED=()    # names of failed steps
LOGDIR=$(mktemp -d "${TMPDIR:-/tmp}/strata-test-logs-XXXXXX")

banner() { printf '\n===== %s =====\n' "$*"; }

# step NAME CMD...: runs CMD, records NAME as ok/FAILED.
step() {
  local name=$1; shift
  banner "$name: $*"
  local t0; t0=$(date +%s)
  if "$@"; then
    SUMMARY+=("$name ok ($(( $(date +%s) - t0 ))s)")
    return 0
  fi
  SUMMARY+=("$name FAILED")
  FAILED+=("$name")
  return 1
}

# ctest_step NAME BUILD_DIR LABEL_REGEX [ctest args...]: runs ctest, summarises pass counts.
ctest_step() {
  local name=$1 dir=$2 labels=$3; shift 3
  banner "$name: ctest -L '$labels' in $dir"
  local log="$LOGDIR/$name.log" t0 rc
  t0=$(date +%s)
  ctest --test-dir "$dir" --output-on-failure --no-tests=ignore -L "$labels" "$@" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  local counts
  counts=$(grep -Eo '[0-9]+ tests failed out of [0-9]+' "$log" | tail -1)
  if [ -n "$counts" ]; then
    local failed total
    failed=$(echo "$counts" | awk '{print $1}')
    total=$(echo "$counts" | awk '{print $NF}')
    counts="$((total - failed))/$total passed"
  else
    counts="no tests"
  fi
  if [ "$rc" = 0 ]; then
    SUMMARY+=("$name $counts ($(( $(date +%s) - t0 ))s)")
  else
    SUMMARY+=("$name FAILED: $counts")
    FAILED+=("$name")
  fi
}

configure() {  # configure DIR BUILD_TYPE [cmake args...]
  local dir=$1 type=$2; shift 2
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE="$type" "$@"
}

# Builds and runs every registered libFuzzer target over a copy of its seed corpus.
fuzz_all() {
  local dir=$BUILD_FUZZ list=$BUILD_FUZZ/fuzz_targets.txt
  rm -f "$list"  # written afresh by cmake/strata.cmake's strata_fuzz at configure time
  configure "$dir" RelWithDebInfo -DSTRATA_FUZZ=ON \
    -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 || return 1
  if [ ! -s "$list" ]; then
    echo "no fuzz targets registered"
    SUMMARY+=("fuzz: no targets")
    return 0
  fi
  local names; mapfile -t names < <(grep -v '^$' "$list" | sort -u)
  ninja -C "$dir" -k 0 -j "$JOBS" "${names[@]}"
  local build_rc=$?
  local work; work=$(mktemp -d "${TMPDIR:-/tmp}/strata-fuzz-XXXXXX")
  local name bin seeds ok=0 bad=()
  check_registered "$dir" 'fuzz_*.cc' || bad+=("(unregistered sources)")
  for name in "${names[@]}"; do
    bin=$(find "$dir" -type f -name "$name" -perm -u+x | head -1)
    if [ -z "$bin" ]; then
      echo "fuzz $name: not built"; bad+=("$name(build)"); continue
    fi
    seeds=""
    for d in "fuzz/corpus/$name" "fuzz/corpus/${name#fuzz_}"; do
      [ -d "$d" ] && { seeds=$d; break; }
    done
    [ -n "$seeds" ] || echo "fuzz $name: WARNING no seed corpus in fuzz/corpus/$name/"
    mkdir -p "$work/$name"
    # New inputs go to the scratch dir (first), seeds are only read: the tree stays clean.
    echo "fuzz $name: ${FUZZ_SECONDS}s over ${seeds:-(no seeds)}"
    if "$bin" -max_total_time="$FUZZ_SECONDS" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$work/$name-" "$work/$name" ${seeds:+"$seeds"} >"$LOGDIR/fuzz-$name.log" 2>&1; then
      ok=$((ok + 1))
      grep -E '^stat::number_of_executed_units' "$LOGDIR/fuzz-$name.log" | sed "s/^/  $name /"
    else
      echo "fuzz $name: FAILED (artifacts in $work, log below)"
      tail -60 "$LOGDIR/fuzz-$name.log"
      bad+=("$name")
    fi
  done
  if [ ${#bad[@]} -gt 0 ] || [ "$build_rc" != 0 ]; then
    SUMMARY+=("fuzz FAILED: ${bad[*]:-build}")
    FAILED+=("fuzz")
    return 0
  fi
  rm -rf "$work"
  SUMMARY+=("fuzz $ok/${#names[@]} targets clean (${FUZZ_SECONDS}s each)")
}

# Servers the test fixtures start live in $TMPDIR/strata-{rgw,s3rver,proxy}-*: any left
# running means a test leaked one.
# Only processes younger than this run count (other runs on a shared machine are not ours).
check_leaks() {
  local leaked age=$(( $(date +%s) - T_START ))
  leaked=$(ps -eo pid=,etimes=,args= | awk -v age="$age" '$2 <= age' |
    grep -E 'strata-(rgw|s3rver|proxy)-[A-Za-z0-9]{6}/' | grep -v grep || true)
  if [ -n "$leaked" ]; then
    echo "leaked test servers:"; echo "$leaked"
    return 1
  fi
}

# Every *_test.cc must be compiled into some test, every fuzz_*.cc into some fuzz target,
# and every test must carry a label this script runs: anything else would silently not run.
check_registered() {  # check_registered BUILD_DIR PATTERN
  local dir=$1 pattern=$2 missing=() f
  while IFS= read -r f; do
    grep -qF "\"file\": \"$PWD/$f\"" "$dir/compile_commands.json" || missing+=("$f")
  done < <(find src -name "$pattern" | sort)
  if [ ${#missing[@]} -gt 0 ]; then
    echo "not built by any target in $dir: ${missing[*]}"
    return 1
  fi
}
check_labels() {
  local unlabelled
  unlabelled=$(ctest --test-dir "$BUILD" -N -LE '^(unit|integration|fuse|stress)$' | grep -E '^ *Test +#' || true)
  if [ -n "$unlabelled" ]; then
    echo "tests without a unit/integration/fuse/stress label (never run):"; echo "$unlabelled"
    return 1
  fi
}

finish() {
  local secs=$(( $(date +%s) - T_START )) joined
  joined=$(printf '%s; ' "${SUMMARY[@]}")
  echo
  if [ ${#FAILED[@]} -eq 0 ]; then
    echo "test.sh: PASS ($MODE) in ${secs}s: ${joined%; }"
    rm -rf "$LOGDIR"
    exit 0
  fi
  echo "test.sh: FAIL ($MODE) in ${secs}s: ${FAILED[*]} failed: ${joined%; } (logs: $LOGDIR)"
  exit 1
}

step setup bash scripts/setup.sh || finish

if [ "$MODE" = sanitize ]; then
  step configure configure "$BUILD_SANITIZE" Sanitize || finish
  step build cmake --build "$BUILD_SANITIZE" -j "$JOBS" -- -k 0
  ctest_step unit "$BUILD_SANITIZE" '^unit$' -j "$JOBS"
  finish
fi

if [ "$MODE" = tsan ]; then
  # A report fails the test (exitcode 66); the second stack of a lock-order report helps.
  export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$PWD/scripts/tsan.supp ${TSAN_OPTIONS:-}"
  step configure configure "$BUILD_TSAN" Tsan || finish
  step build cmake --build "$BUILD_TSAN" -j "$JOBS" -- -k 0
  ctest_step unit "$BUILD_TSAN" '^unit$' -j "$JOBS"
  ctest_step integration "$BUILD_TSAN" '^integration$'
  step leaks check_leaks
  finish
fi

step configure configure "$BUILD" RelWithDebInfo -DSTRATA_WERROR=ON || finish
# The locking annotations (GUARDED_BY, REQUIRES) proved by clang: gcc ignores them.
if command -v clang++-14 >/dev/null 2>&1; then
  step thread-safety bash scripts/thread_safety.sh "$BUILD"
else
  SUMMARY+=("thread-safety skipped (no clang++-14)")
fi
step build cmake --build "$BUILD" -j "$JOBS" -- -k 0
step tests-registered check_registered "$BUILD" '*_test.cc'
step labels check_labels
ctest_step unit "$BUILD" '^unit$' -j "$JOBS"
# Integration and FUSE tests start real servers and measure time: one at a time.
ctest_step integration "$BUILD" '^integration$'
ctest_step fuse "$BUILD" '^fuse$'
if [ "${STRATA_STRESS:-0}" = 1 ]; then
  ctest_step stress "$BUILD" '^stress$'
fi
step leaks check_leaks
if command -v clang-14 >/dev/null 2>&1; then
  banner "fuzz"
  fuzz_all || { SUMMARY+=("fuzz FAILED: configure"); FAILED+=("fuzz"); }
else
  SUMMARY+=("fuzz skipped (no clang-14)")
fi
finish
