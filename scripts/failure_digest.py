#!/usr/bin/env python3
"""Prints, for each failed test in ctest logs, the lines that say why (gtest's failure messages,
or the last lines of a test that timed out), a bounded number of them.

test.sh prints this last, next to its summary: a CI report that keeps only the head and the tail
of a long run's output still shows why each test failed.

usage: failure_digest.py STEP_LOG... | --self-test
"""
import re
import sys

PER_TEST = 8  # lines kept per failed test
TOTAL = 56  # lines kept in all: CI reports keep the tail of the output
WIDTH = 400  # characters kept per line

RESULT = re.compile(r"^\s*\d+/\d+ Test\s+#\d+: (\S+) \.*\s*\*\*\*(\w+)")
START = re.compile(r"^\s*Start\s+\d+: ")
FAILURE = re.compile(r": Failure$|^\S+:\d+: error: |ERROR: AddressSanitizer|runtime error: |ThreadSanitizer")


def failed_tests(path):
    """Yields (test, kind, output lines) for each failed test in one ctest log."""
    name = kind = None
    lines = []
    with open(path, errors="replace") as log:
        for line in log:
            line = line.rstrip("\n")
            result = RESULT.match(line)
            if result or START.match(line) or line.startswith(("Label Time Summary", "The following tests")):
                if name:
                    yield name, kind, lines
                name = kind = None
                lines = []
                if result:
                    name, kind = result.group(1), result.group(2)
                continue
            if name:
                lines.append(line)
    if name:
        yield name, kind, lines


def why(kind, lines):
    """The lines of one test's output that say why it failed."""
    kept = []
    i = 0
    while i < len(lines):
        if FAILURE.search(lines[i]):
            kept.append(lines[i])
            j = i + 1
            while j < len(lines) and j - i <= 8 and not lines[j].startswith("["):
                kept.append(lines[j])
                j += 1
            i = j
            continue
        if lines[i].startswith("[  FAILED  ]") and "listed below" not in lines[i]:
            kept.append(lines[i])
        i += 1
    if not kept or kind != "Failed":
        kept += [l for l in lines if l.strip()][-6:]  # a timeout or a crash: where it stopped
    seen = set()
    unique = [l for l in kept if not (l in seen or seen.add(l))]
    return unique[:PER_TEST]


def main(paths):
    out = []
    for path in paths:
        try:
            for name, kind, lines in failed_tests(path):
                out.append(f"--- {name} ({kind}, {path})")
                out += ["    " + l[:WIDTH] for l in why(kind, lines)]
        except OSError as e:
            out.append(f"--- {path}: {e.strerror}")
    if out:
        print("===== why the failed tests failed (the whole output is in the logs) =====")
        print("\n".join(out[:TOTAL]))
        if len(out) > TOTAL:
            print(f"... {len(out) - TOTAL} more lines in the logs")


SAMPLE = """\
      Start  9: object_file_test
 3/51 Test  #9: object_file_test .................***Failed    3.39 sec
[ RUN      ] FileLayoutTest.Moves
[       OK ] FileLayoutTest.Fine (1 ms)
src/object/file_store_layout_test.cc:132: Failure
Expected equality of these values:
  misses.load()
    Which is: 1
[  FAILED  ] FileLayoutTest.Moves (147 ms)
      Start 11: s3_server_test
 4/51 Test #11: s3_server_test ...................   Passed   10.56 sec
      Start 24: group_serve_test
 5/51 Test #24: group_serve_test .................***Timeout 300.01 sec
[ RUN      ] GroupServe.Warm
waiting for the members
Label Time Summary:
"""


def self_test():
    """The digest names each failed test with its failure lines, and no passed test."""
    import contextlib, io, os, tempfile

    with tempfile.NamedTemporaryFile("w", suffix=".log", delete=False) as f:
        f.write(SAMPLE)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main([f.name])
    os.unlink(f.name)
    text = out.getvalue()
    checks = {
        "the failed test": "--- object_file_test (Failed" in text,
        "its failure line": "file_store_layout_test.cc:132: Failure" in text and "Which is: 1" in text,
        "its failed case": "[  FAILED  ] FileLayoutTest.Moves" in text,
        "not the passed case": "FileLayoutTest.Fine" not in text,
        "not the passed test": "s3_server_test" not in text,
        "the timed-out test and where it stopped": "--- group_serve_test (Timeout" in text
        and "waiting for the members" in text,
    }
    bad = [what for what, ok in checks.items() if not ok]
    if bad:
        print("self-test failed: missing " + ", ".join(bad) + " in:\n" + text)
        return 1
    print("self-test ok")
    return 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--self-test"]:
        sys.exit(self_test())
    main(sys.argv[1:])
