#!/usr/bin/env python3
"""Per-target pass counts of one ctest run, for scripts/test.sh's closing lines.

  ctest_summary.py <build dir> <ctest output> <label>=<regex> [<label>=<regex> ...]

Reads the run's result lines from <ctest output> (what ctest printed) and every test's output from
<build dir>/Testing/Temporary/LastTest.log (written whole when the test ends, also under ctest -j),
and prints, per label, "<label>: N passed, 0 failed" over the
tests whose names match <regex> (re.search). N counts a Catch2 suite as its test cases and any
other test as one; a test ctest reports Skipped (an ISA the CPU lacks) is counted apart. A test
that did not pass, or a label that matches no test, is an error (exit status 1).
"""
import re
import sys


def main() -> int:
    build, output, specs = sys.argv[1], sys.argv[2], sys.argv[3:]
    tests = {}  # name -> {"cases": int or None, "result": "passed" | "failed" | "skipped"}
    with open(output, encoding="utf-8", errors="replace") as out:
        for line in out:
            m = re.match(r"^\s*\d+/\d+ Test +#\d+: (\S+) ", line)
            if m:
                result = "skipped" if "***Skipped" in line else "passed" if " Passed " in line else "failed"
                tests[m.group(1)] = {"cases": None, "result": result}
    current = None
    with open(f"{build}/Testing/Temporary/LastTest.log", encoding="utf-8", errors="replace") as log:
        for line in log:
            m = re.match(r"^\d+/\d+ Testing: (\S+)", line)
            if m:
                current = tests.get(m.group(1))
                continue
            if current is None:
                continue
            m = re.search(r"in (\d+) test cases?\)", line)
            if m:
                current["cases"] = (current["cases"] or 0) + int(m.group(1))
    status = 0
    for spec in specs:
        label, regex = spec.split("=", 1)
        chosen = {n: t for n, t in tests.items() if re.search(regex, n)}
        if not chosen:
            print(f"{label}: no test matched {regex!r}")
            status = 1
            continue
        passed = sum((t["cases"] or 1) for t in chosen.values() if t["result"] == "passed")
        failed = [n for n, t in chosen.items() if t["result"] == "failed"]
        skipped = sum(1 for t in chosen.values() if t["result"] == "skipped")
        line = f"{label}: {passed} passed, {len(failed)} failed"
        if skipped:
            line += f", {skipped} skipped (ISA not on this CPU)"
        if failed:
            line += " (" + ", ".join(sorted(failed)) + ")"
            status = 1
        print(line)
    return status


if __name__ == "__main__":
    sys.exit(main())
