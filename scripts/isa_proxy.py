#!/usr/bin/env python3
"""Static performance proxy from the disassembly (llvm-objdump-19), for targets without a device here.

For every function whose demangled name matches FUNC, finds the innermost loops (a backward branch
and the instructions it spans) that contain an instruction matching MARK and prints, per loop, the
instruction count and the MARK count. With --require, exits 1 when no such instruction exists in
any matching function (the ISA check: e.g. the SME binary must contain FMOPA).

Hexagon binaries (detected from the disassembly's packets) are counted in VLIW packets: the loops
are the hardware loops (loop0 ... :endloop0) and backward jumps, and each loop prints its packets,
its HVX instructions (those naming a vector register) and, with --bytes B (the packed-weight
bytes one iteration consumes), packets and HVX instructions per 128 bytes.

  scripts/isa_proxy.py BINARY --func REGEX --mark REGEX [--args REGEX] [--require] [--label TEXT] [--bytes B]
"""
import argparse
import re
import subprocess
import sys


def matching_symbols(binary, fre):
    """{mangled: demangled} of the binary's defined code symbols whose demangled name matches fre,
    from llvm-nm-19 (the two listings in the same order); None when they cannot be paired."""
    def nm(*extra):
        r = subprocess.run(["llvm-nm-19", "--defined-only", "--no-sort", *extra, binary],
                           capture_output=True, text=True)
        return [line.split(" ", 2) for line in r.stdout.splitlines()] if r.returncode == 0 else None
    raw, dem = nm(), nm("--demangle")
    if raw is None or dem is None or len(raw) != len(dem):
        return None
    return {r[2]: d[2] for r, d in zip(raw, dem)
            if len(r) == 3 and len(d) == 3 and r[1] in "tTwW" and fre.search(d[2])}


def functions(binary, fre=None):
    """(demangled name, [(address, mnemonic, operands)]) of the binary's functions; with fre, only
    those whose name matches it (disassembled alone: --disassemble-symbols, a fraction of the time)."""
    names = matching_symbols(binary, fre) if fre is not None else None
    if names is not None and not names:
        return
    cmd = ["llvm-objdump-19", "-d", "--no-show-raw-insn", binary]
    cmd += ["-C"] if names is None else ["--disassemble-symbols=" + ",".join(names)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    name, body = None, []
    for line in out.splitlines():
        m = re.match(r"^([0-9a-f]+) <(.*)>:$", line)
        if m:
            if name:
                yield name, body
            name, body = m.group(2), []
            if names is not None:
                name = names.get(name, name)
            continue
        m = re.match(r"^\s*([0-9a-f]+):\s+(\S+)\s*(.*)$", line)
        if m and name:
            body.append((int(m.group(1), 16), m.group(2), m.group(3)))
    if name:
        yield name, body


def finish(a, found):
    """The closing line, and the ISA check's verdict."""
    print(f"{a.label}{found} instructions matching {a.mark} in functions matching {a.func}")
    if a.require and found == 0:
        print(f"ISA check failed: no {a.mark} in {a.binary}", file=sys.stderr)
        return 1
    return 0


def hexagon_packets(body):
    """[(address, [instructions], ends_loop0)] from llvm-objdump's Hexagon packet listing."""
    packets, cur = [], None
    for addr, op, args in body:
        text = (op + " " + args).strip()
        if text.startswith("{"):
            cur = [addr, [], False]
            packets.append(cur)
            text = text[1:]
        if cur is None:
            continue
        end = "}" in text
        cur[2] = cur[2] or ":endloop0" in text
        text = text.split("}")[0]
        cur[1] += [i.strip() for i in text.split(";") if i.strip()]
        if end:
            cur = None
    return packets


def hexagon_loops(packets):
    """(start, end) packet-address ranges of hardware loops and backward jumps, innermost first."""
    out = []
    for i, (addr, ins, _) in enumerate(packets):
        for x in ins:
            m = re.match(r"loop0\(0x([0-9a-f]+)", x)
            if m:
                start = int(m.group(1), 16)
                end = next((a for a, _, e in packets[i:] if e and a >= start), None)
                if end is not None:
                    out.append((start, end))
            m = re.search(r"jump(?::\w+)? 0x([0-9a-f]+)$", x)
            if m and int(m.group(1), 16) <= addr:
                out.append((int(m.group(1), 16), addr))
    return sorted(set(out), key=lambda r: r[1] - r[0])


def hexagon_main(a, fre, mre, funcs):
    found = 0
    hvx = re.compile(r"\bv\d+\b|\bvmem|\bvtmp\b")
    for name, body in funcs:
        if not fre.search(name):
            continue
        packets = hexagon_packets(body)
        nmark = sum(1 for _, ins, _ in packets for x in ins if mre.search(x))
        found += nmark
        if not nmark:
            continue
        seen = []
        if not any(any(mre.search(x) for p in packets if lo <= p[0] <= hi for x in p[1])
                   for lo, hi in hexagon_loops(packets)):
            # straight-line code (one call = one unit of work): the whole function
            ins = [x for p in packets for x in p[1]]
            v = sum(1 for x in ins if hvx.search(x))
            short = name if len(name) < 110 else name[:107] + "..."
            per = f"; per 128 bytes: {len(packets) * 128 / a.bytes:.1f} packets" if a.bytes else ""
            print(f"{a.label}{short}: straight line {len(packets)} packets, {v} HVX instructions, {nmark} x {a.mark}{per}")
        for lo, hi in hexagon_loops(packets):
            pk = [p for p in packets if lo <= p[0] <= hi]
            ins = [x for p in pk for x in p[1]]
            m = sum(1 for x in ins if mre.search(x))
            if m == 0 or any(s <= lo and hi <= e or lo <= s and e <= hi for s, e in seen):
                continue
            seen.append((lo, hi))
            v = sum(1 for x in ins if hvx.search(x))
            short = name if len(name) < 110 else name[:107] + "..."
            per = ""
            if a.bytes:
                per = f"; per 128 bytes: {len(pk) * 128 / a.bytes:.1f} packets, {v * 128 / a.bytes:.1f} HVX instructions"
            print(f"{a.label}{short}: inner loop {len(pk)} packets, {v} HVX instructions, {m} x {a.mark}{per}")
    return finish(a, found)


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
    ap.add_argument("--bytes", type=float, default=0.0)
    ap.add_argument("--args", default="", help="count a MARK instruction only when its operands match this "
                    "regex (e.g. '^z[0-9]+\\.b,': an SVE TBL, not a NEON one)")
    a = ap.parse_args()
    fre, mre = re.compile(a.func), re.compile(a.mark)
    are = re.compile(a.args) if a.args else None
    funcs = list(functions(a.binary, fre))
    if any(op.startswith("{") for _, body in funcs[:50] for _, op, _ in body[:4]):
        return hexagon_main(a, fre, mre, funcs)
    found = 0
    for name, body in funcs:
        if not fre.search(name):
            continue
        def is_mark(i):
            return mre.fullmatch(i[1]) and (are is None or are.search(i[2]))
        marks = [i for i in body if is_mark(i)]
        found += len(marks)
        if not marks:
            continue
        seen = set()
        for lo, hi in loops(body):
            ins = [i for i in body if lo <= i[0] <= hi]
            m = sum(1 for i in ins if is_mark(i))
            if m == 0 or any(lo <= s and e <= hi for s, e in seen):
                continue
            seen.add((lo, hi))
            short = name if len(name) < 110 else name[:107] + "..."
            print(f"{a.label}{short}: inner loop {len(ins)} instructions, {m} x {a.mark}")
    return finish(a, found)


if __name__ == "__main__":
    sys.exit(main())
