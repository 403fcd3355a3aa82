#!/usr/bin/env bash
# The test command (CI runs it through .ci/run):
#
#   scripts/test.sh              the default suite, then the sanitizers:
#     1. setup; build/ (gcc, RelWithDebInfo, -Werror); ctest labels unit, integration, fuse (+ stress
#        with STRATA_STRESS=1)
#     2. build-sanitize/ (clang-14, ASan+UBSan, libFuzzer's coverage; it also proves the locking
#        annotations in every file: -Werror=thread-safety): labels unit and integration (with the
#        Python tests, the ASan runtime preloaded), then every libFuzzer target on its seed corpus
#        and a fixed-seed exploration
#     3. build-tsan/ (ThreadSanitizer): the concurrent tests ($TSAN_TESTS below)
#     The sanitizer trees build in the background at idle CPU priority while the serial integration
#     tests before them run (those mostly wait on servers: they keep the CPU whenever they want it).
#   scripts/test.sh --sanitize   setup, then step 2 alone
#   scripts/test.sh --tsan       setup, build-tsan/: every unit and integration test (on demand: too
#                                slow for CI, see docs/contributing.md)
#
# Environment: STRATA_STRESS=1 adds the stress label; STRATA_SANITIZERS=0 skips steps 2 and 3 (and
# checks the locking annotations with scripts/thread_safety.sh instead); STRATA_TSAN_TESTS (test
# names, space-separated) replaces step 3's tests; STRATA_TSAN_BUDGET_MIN (default 50): minutes into
# the run past which step 3 skips its integration tests (said in the summary); STRATA_FUZZ_RUNS
# (default 100000) and STRATA_FUZZ_SEED (default 1) per fuzz target in the default mode,
# STRATA_FUZZ_SECONDS (default 5) of random exploration with --sanitize; STRATA_JOBS (default: cores)
# build/unit-test/fuzz parallelism; STRATA_BUILD_DIR, STRATA_SANITIZE_BUILD_DIR, STRATA_TSAN_BUILD_DIR
# override the build dirs.
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
  -h|--help) sed -n '2,25p' "$0"; exit 0 ;;
  *) echo "usage: $0 [--sanitize|--tsan]" >&2; exit 2 ;;
esac

JOBS=${STRATA_JOBS:-$(nproc)}
FUZZ_SECONDS=${STRATA_FUZZ_SECONDS:-5}
FUZZ_SEED=${STRATA_FUZZ_SEED:-1}
FUZZ_RUNS=${STRATA_FUZZ_RUNS:-100000}
SANITIZERS=${STRATA_SANITIZERS:-1}
BUILD=${STRATA_BUILD_DIR:-build}
BUILD_SANITIZE=${STRATA_SANITIZE_BUILD_DIR:-build-sanitize}
BUILD_TSAN=${STRATA_TSAN_BUILD_DIR:-build-tsan}
# Minutes into the run past which step 3 runs its unit tests only (CI's whole run: under 60 min).
TSAN_BUDGET_MIN=${STRATA_TSAN_BUDGET_MIN:-50}
# Step 3's tests: those of the modules that run threads of their own (pools, single-flight, the
# HTTP client's loop, the cache's tiers and bounded waits, the loader's pipeline and shard cache,
# the mount's namespace, the gateway's server, the cache group, the checkpoint writer), without
# those that need the CLI (a third of the build) or run for minutes; the full set is --tsan's.
TSAN_TESTS=${STRATA_TSAN_TESTS:-base_test http_client_test object_test s3_store_test cache_test cache_conformance_test
  loader_test fs_test fs_prefetch_test gateway_test group_unit_test
  cache_disk_test ckpt_test ckpt_tiering_test gateway_server_test group_test loader_integration_test}
CLANG_C=clang-14
CLANG_CXX=clang++-14
T_START=$(date +%s)
SUMMARY=()   # "step: result" entries for the final line
FAILED=()    # names of failed steps
LOGDIR=$(mktemp -d "${TMPDIR:-/tmp}/strata-test-logs-XXXXXX")
declare -A BG_PID=() BG_T0=()  # background builds, by step name

# A UBSan report fails its test (the build aborts on one) with its stack.
export UBSAN_OPTIONS="print_stacktrace=1 ${UBSAN_OPTIONS:-}"
# A report fails the test (exitcode 66); the second stack of a lock-order report helps.
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$PWD/scripts/tsan.supp ${TSAN_OPTIONS:-}"

# The least free disk seen at a step's start (servers refuse to start on a nearly full disk:
# Ceph's mon at 5% free; this machine's volume is shared and its free space moves).
DISK_MIN_MB=
note_disk() {
  local mb; mb=$(df -Pm "${TMPDIR:-/tmp}" 2>/dev/null | awk 'NR == 2 { print $4 }')
  [ -n "$mb" ] || return 0
  if [ -z "$DISK_MIN_MB" ] || [ "$mb" -lt "$DISK_MIN_MB" ]; then DISK_MIN_MB=$mb; fi
}
banner() { note_disk; printf '\n===== %s =====\n' "$*"; }

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

# The ASan+UBSan tree (clang: the fuzz targets need libFuzzer) and the TSan one.
configure_sanitize() {
  rm -f "$BUILD_SANITIZE/fuzz_targets.txt"  # written afresh by strata_fuzz at configure time
  configure "$BUILD_SANITIZE" Sanitize -DSTRATA_FUZZ=ON -DCMAKE_C_COMPILER=$CLANG_C -DCMAKE_CXX_COMPILER=$CLANG_CXX
}
configure_tsan() { configure "$BUILD_TSAN" Tsan; }
fuzz_targets() { grep -v '^$' "$BUILD_SANITIZE/fuzz_targets.txt" 2>/dev/null | sort -u; }

# Runs a command at idle CPU priority (SCHED_IDLE): it gets only what the rest leaves.
idle() {
  if chrt -i 0 true 2>/dev/null; then chrt -i 0 "$@"; else nice -n 19 "$@"; fi
}

# bg_build NAME DIR TARGET...: builds in the background, at idle priority, logging to
# $LOGDIR/NAME.log; bg_wait NAME waits for it and records the step. A build still running when
# this script exits is stopped (by its pid). Its exit status goes to $LOGDIR/NAME.rc: `wait PID`
# loses it when the PID is reused after the build ended (pid_max is 32768 here, and the tests
# start thousands of processes meanwhile: "wait: pid N is not a child of this shell").
bg_build() {
  local name=$1 dir=$2; shift 2
  banner "$name (background, idle priority; log $LOGDIR/$name.log): ninja -C $dir $*"
  BG_T0[$name]=$(date +%s)
  rm -f "$LOGDIR/$name.rc"
  (
    rc=0
    idle ninja -C "$dir" -k 0 -j "$JOBS" "$@" || rc=$?
    echo "$rc" >"$LOGDIR/$name.rc"
  ) >"$LOGDIR/$name.log" 2>&1 &
  BG_PID[$name]=$!
}
bg_wait() {
  local name=$1 rc
  [ -n "${BG_PID[$name]:-}" ] || return 1
  banner "$name: waiting for the background build"
  wait "${BG_PID[$name]}" 2>/dev/null || true  # at once if it ended long ago (its status: the .rc file)
  rc=$(cat "$LOGDIR/$name.rc" 2>/dev/null) || rc="no exit status (killed?)"
  unset "BG_PID[$name]"
  tail -5 "$LOGDIR/$name.log"
  if [ "$rc" = 0 ]; then
    SUMMARY+=("$name ok ($(( $(date +%s) - BG_T0[$name] ))s, in the background)")
    return 0
  fi
  grep -E -B2 -A20 'FAILED:|error:' "$LOGDIR/$name.log" | head -200
  SUMMARY+=("$name FAILED")
  FAILED+=("$name")
  return 1
}
stop_background() {
  local name pid
  for name in "${!BG_PID[@]}"; do
    [ -e "$LOGDIR/$name.rc" ] && continue  # ended: its PID may be another process's by now
    pid=${BG_PID[$name]}
    pkill -P "$pid" 2>/dev/null || true  # the build under the subshell, then the subshell
    kill "$pid" 2>/dev/null || true
  done
}
trap stop_background EXIT

# The fuzz step: every registered libFuzzer target (built in build-sanitize/) over a copy of its seed
# corpus, then exploring mutations, $JOBS targets at a time. CI's default mode explores a fixed
# number of mutations from a fixed seed (-seed, -runs), the same inputs every run, so a failure there
# follows from a change to the code or the seeds, not from luck; --sanitize explores at random for
# STRATA_FUZZ_SECONDS per target. The fixed runs trace no comparisons (-use_cmp=0) and run without
# address randomisation (setarch -R): traced operands include heap addresses, which differ between
# runs and would steer the mutations apart. FUZZ_RUNS_OF: targets whose one input costs 10-1000x the
# others' (a whole gateway per request; seeds of up to 1 MiB by design) run fewer: the step stays
# under ~2 min on 2 cores.
declare -A FUZZ_RUNS_OF=([fuzz_gateway_request]=15000 [fuzz_etcd_json]=60000 [fuzz_manifest]=60000
  [fuzz_xml]=60000 [fuzz_xml_linear]=200)
fuzz_budget() {  # fuzz_budget NAME: the flags that bound one target's exploration
  if [ "$MODE" = default ]; then
    echo "-seed=$FUZZ_SEED -runs=${FUZZ_RUNS_OF[$1]:-$FUZZ_RUNS} -use_cmp=0"
  else
    echo "-max_total_time=$FUZZ_SECONDS"
  fi
}
fuzz_one() {  # fuzz_one NAME BIN SEEDS WORK: libFuzzer's exit code goes to WORK/NAME.rc
  local name=$1 bin=$2 seeds=$3 work=$4 fixed=()
  mkdir -p "$work/$name"
  if [ "$MODE" = default ] && setarch "$(uname -m)" -R true 2>/dev/null; then fixed=(setarch "$(uname -m)" -R); fi
  # New inputs go to the scratch dir (first), seeds are only read: the tree stays clean.
  "${fixed[@]}" "$bin" $(fuzz_budget "$name") -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$work/$name-" "$work/$name" ${seeds:+"$seeds"} >"$LOGDIR/fuzz-$name.log" 2>&1
  echo $? >"$work/$name.rc"
}
fuzz_seeds() {
  local dir=$BUILD_SANITIZE names name bin seeds ok=0 bad=() running=() t0=$(date +%s)
  mapfile -t names < <(fuzz_targets)
  if [ ${#names[@]} -eq 0 ]; then
    echo "no fuzz targets registered"
    SUMMARY+=("fuzz: no targets")
    return 0
  fi
  local work; work=$(mktemp -d "${TMPDIR:-/tmp}/strata-fuzz-XXXXXX")
  check_registered "$dir" 'fuzz_*.cc' || bad+=("(unregistered sources)")
  for name in "${names[@]}"; do
    bin=$(find "$dir" -type f -name "$name" -perm -u+x | head -1)
    if [ -z "$bin" ]; then
      echo "fuzz $name: not built"; bad+=("$name(build)"); echo build >"$work/$name.rc"; continue
    fi
    seeds=""
    for d in "fuzz/corpus/$name" "fuzz/corpus/${name#fuzz_}"; do
      [ -d "$d" ] && { seeds=$d; break; }
    done
    [ -n "$seeds" ] || echo "fuzz $name: WARNING no seed corpus in fuzz/corpus/$name/"
    while [ ${#running[@]} -ge "$JOBS" ]; do
      wait -n "${running[@]}"
      mapfile -t running < <(for p in "${running[@]}"; do kill -0 "$p" 2>/dev/null && echo "$p"; done)
    done
    echo "fuzz $name: $(fuzz_budget "$name") over ${seeds:-(no seeds)}"
    fuzz_one "$name" "$bin" "$seeds" "$work" &
    running+=($!)
  done
  [ ${#running[@]} -eq 0 ] || wait "${running[@]}"
  for name in "${names[@]}"; do
    case "$(cat "$work/$name.rc" 2>/dev/null)" in
      build) ;;
      0)
        ok=$((ok + 1))
        grep -E '^stat::number_of_executed_units' "$LOGDIR/fuzz-$name.log" | sed "s/^/  $name /" ;;
      *)
        echo "fuzz $name: FAILED (artifacts in $work, log below)"
        tail -60 "$LOGDIR/fuzz-$name.log"
        bad+=("$name") ;;
    esac
  done
  if [ ${#bad[@]} -gt 0 ]; then
    SUMMARY+=("fuzz FAILED: ${bad[*]}")
    FAILED+=("fuzz")
    return 0
  fi
  rm -rf "$work"
  local how="${FUZZ_SECONDS}s each"
  [ "$MODE" = default ] && how="seed $FUZZ_SEED, $FUZZ_RUNS runs each, fewer for ${#FUZZ_RUNS_OF[@]}"
  SUMMARY+=("fuzz $ok/${#names[@]} targets clean ($how, ASan+UBSan, $(( $(date +%s) - t0 ))s)")
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
  note_disk
  [ -z "$DISK_MIN_MB" ] || SUMMARY+=("disk: ${DISK_MIN_MB} MB free at least")
  joined=$(printf '%s; ' "${SUMMARY[@]}")
  echo
  if [ ${#FAILED[@]} -eq 0 ]; then
    echo "test.sh: PASS ($MODE) in ${secs}s: ${joined%; }"
    rm -rf "$LOGDIR"
    exit 0
  fi
  local logs=()
  for name in "${FAILED[@]}"; do [ -f "$LOGDIR/$name.log" ] && logs+=("$LOGDIR/$name.log"); done
  [ ${#logs[@]} -eq 0 ] || /usr/bin/python3 scripts/failure_digest.py "${logs[@]}" || true
  echo "test.sh: FAIL ($MODE) in ${secs}s: ${FAILED[*]} failed: ${joined%; } (logs: $LOGDIR)"
  exit 1
}

# The sanitizer tree's tests: unit, then integration (serial: they start servers and measure
# time), then the fuzz targets' seeds. run_sanitize_tests [BETWEEN_CMD...]: BETWEEN runs after
# the unit tests (the default mode starts the TSan build there).
run_sanitize_tests() {
  ctest_step asan-unit "$BUILD_SANITIZE" '^unit$' -j "$JOBS"
  "$@"
  # With the Python suite (torch uninstrumented, the runtime preloaded): 1-6 minutes on 2 cores.
  ctest_step asan-integration "$BUILD_SANITIZE" '^integration$'
  fuzz_seeds
  step asan-leaks check_leaks
}
sanitize_targets() { echo label_unit label_integration $(fuzz_targets); }
tsan_targets() { echo $TSAN_TESTS; }
tsan_regex() { local names; names=$(echo $TSAN_TESTS | tr ' ' '|'); echo "^($names)\$"; }

step setup bash scripts/setup.sh || finish

if [ "$MODE" = sanitize ]; then
  step configure configure_sanitize || finish
  step build ninja -C "$BUILD_SANITIZE" -k 0 -j "$JOBS" $(sanitize_targets)
  run_sanitize_tests
  finish
fi

if [ "$MODE" = tsan ]; then
  step configure configure_tsan || finish
  step build ninja -C "$BUILD_TSAN" -k 0 -j "$JOBS" label_unit label_integration
  ctest_step unit "$BUILD_TSAN" '^unit$' -j "$JOBS"
  # Not the Python tests: they fork threaded processes (DataLoader workers), after which TSan
  # starts no thread, and the interpreter is not instrumented.
  ctest_step integration "$BUILD_TSAN" '^integration$' -E '^python_tests$'
  step leaks check_leaks
  finish
fi

step configure configure "$BUILD" RelWithDebInfo -DSTRATA_WERROR=ON || finish
# The locking annotations (GUARDED_BY, REQUIRES) proved by clang (gcc ignores them): the clang
# sanitizer build compiles every file with -Werror=thread-safety; without it, a syntax-only pass.
if [ "$SANITIZERS" != 1 ]; then
  step thread-safety bash scripts/thread_safety.sh "$BUILD"
fi
step build cmake --build "$BUILD" -j "$JOBS" -- -k 0
step tests-registered check_registered "$BUILD" '*_test.cc'
step labels check_labels
ctest_step unit "$BUILD" '^unit$' -j "$JOBS"
if [ "$SANITIZERS" = 1 ]; then
  step configure-sanitize configure_sanitize && bg_build build-sanitize "$BUILD_SANITIZE" $(sanitize_targets)
fi
# Integration and FUSE tests start real servers and measure time: one at a time.
ctest_step integration "$BUILD" '^integration$'
ctest_step fuse "$BUILD" '^fuse$'
if [ "${STRATA_STRESS:-0}" = 1 ]; then
  ctest_step stress "$BUILD" '^stress$'
fi
step leaks check_leaks
if [ "$SANITIZERS" = 1 ]; then
  bg_wait build-sanitize
  start_tsan_build() {
    step configure-tsan configure_tsan && bg_build build-tsan "$BUILD_TSAN" $(tsan_targets)
  }
  run_sanitize_tests start_tsan_build
  if bg_wait build-tsan; then
    ctest_step tsan-unit "$BUILD_TSAN" '^unit$' -R "$(tsan_regex)" -j "$JOBS"
    # CI's whole run must stay under 60 min: on a slow run the integration part of TSan's subset
    # (several minutes) is left out, and the summary says so.
    elapsed=$(( $(date +%s) - T_START ))
    if [ "$elapsed" -lt $(( TSAN_BUDGET_MIN * 60 )) ]; then
      ctest_step tsan-integration "$BUILD_TSAN" '^integration$' -R "$(tsan_regex)"
    else
      SUMMARY+=("tsan-integration skipped (${elapsed}s into the run; STRATA_TSAN_BUDGET_MIN=$TSAN_BUDGET_MIN)")
    fi
    step tsan-leaks check_leaks
  fi
fi
finish
