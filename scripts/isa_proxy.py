#!/usr/bin/env python3
"""Static performance proxy from the disassembly (llvm-objdump-19), for targets without a device here.

For every function whose demangled name matches FUNC, finds the innermost loops (a backward branch
and the instructions it spans) that contain an instruction matching MARK and prints, per loop, the
instruction count and the MARK count. With --require, exits 1 when no such instruction exists in
any matching function (the ISA check: e.g. the SME binary must contain FMOPA).

  scripts/isa_proxy.py BINARY --func REGEX --mark REGEX [--require] [--label TEXT]
"""
import argparse
import re
import subprocess
import sys


def functions(binary):
    out = subprocess.run(["llvm-objdump-19", "-d", "-C", "--no-show-raw-insn", binary],
                         capture_output=True, text=True, check=True).stdout
    name, body = None, []
    for line in out.splitlines():
        m = re.match(r"^([0-9a-f]+) <(.*)>:$", line)
        if m:
            if name:
                yield name, body
            name, body = m.group(2), []
            continue
        m = re.match(r"^\s*([0-9a-f]+):\s+(\S+)\s*(.*)$", line)
        if m and name:
            body.append((int(m.group(1), 16), m.group(2), m.group(3)))
    if name:
        yield name, body


def loops(body):
    """(start, end) address ranges of backward branches, innermost first."""
    out = []
    for addr, op, args in body:
        if op.startswith("b") and not op.startswith("bl") and not op.startswith("bic") and not op.startswith("bsl") \
                or op in ("cbz", "cbnz", "tbz", "tbnz"):
            m = re.search(r"\b0x([0-9a-f]+)\b", args) or re.search(r"^([0-9a-f]+)\b", args)
            if m:
                target = int(m.group(1), 16)
                if target <= addr:
                    out.append((target, addr))
    return sorted(out, key=lambda r: r[1] - r[0])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--func", required=True)
    ap.add_argument("--mark", required=True)
    ap.add_argument("--require", action="store_true")
    ap.add_argument("--label", default="")
    a = ap.parse_args()
    fre, mre = re.compile(a.func), re.compile(a.mark)
    found = 0
    for name, body in functions(a.binary):
        if not fre.search(name):
            continue
        marks = [i for i in body if mre.fullmatch(i[1])]
        found += len(marks)
        if not marks:
            continue
        seen = set()
        for lo, hi in loops(body):
            ins = [i for i in body if lo <= i[0] <= hi]
            m = sum(1 for i in ins if mre.fullmatch(i[1]))
            if m == 0 or any(lo <= s and e <= hi for s, e in seen):
                continue
            seen.add((lo, hi))
            short = name if len(name) < 110 else name[:107] + "..."
            print(f"{a.label}{short}: inner loop {len(ins)} instructions, {m} x {a.mark}")
    print(f"{a.label}{found} instructions matching {a.mark} in functions matching {a.func}")
    if a.require and found == 0:
        print(f"ISA check failed: no {a.mark} in {a.binary}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
