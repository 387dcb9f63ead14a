#!/usr/bin/env python3
"""Table of medians (and best-of) from one or more compare.sh raw logs.

    python3 benchmarks/llama_cpp/summarize.py build/llama_cpp/results/raw-*.log
"""
import re, sys, statistics as st

hdr = re.compile(r"^## (\S+?)(?:\.gguf)? T=(\d+) rep (\d+)")
row = re.compile(r"^\s+lutkit pp (\S+) decode (\S+) \((.*?)\) \| llama\.cpp pp (\S+) tg (\S+) \((.*?)\)")
cpu = re.compile(r"cpu (\d+)%")
rows, key = {}, None
for path in sys.argv[1:]:
    for line in open(path):
        if m := hdr.match(line):
            key = (m[1], int(m[2]))
        elif (m := row.match(line)) and key:
            def f(x):
                try: return float(x)
                except ValueError: return float("nan")
            lc, cc = cpu.search(m[3]), cpu.search(m[6])
            rows.setdefault(key, []).append(
                (f(m[1]), f(m[4]), f(m[2]), f(m[5]), int(lc[1]) if lc else 0, int(cc[1]) if cc else 0))

def good(xs):
    return [x for x in xs if x == x]

print(f"{'model':<20} {'T':>2} {'n':>2} | {'lutkit pp512':>12} {'llama pp512':>11} {'ratio':>5} | "
      f"{'lutkit tg':>9} {'llama tg':>8} {'ratio':>5} | {'cpu% lk/ll':>10}")
for stat, fn in (("median", st.median), ("best", max)):
    print(f"-- {stat} --")
    for (m, t), vs in rows.items():
        lp, cp, ld, cg = (fn(good([v[i] for v in vs]) or [float('nan')]) for i in range(4))
        lcpu, ccpu = st.median([v[4] for v in vs]), st.median([v[5] for v in vs])
        print(f"{m:<20} {t:>2} {len(vs):>2} | {lp:>12.1f} {cp:>11.1f} {lp/cp:>5.2f} | "
              f"{ld:>9.2f} {cg:>8.2f} {ld/cg:>5.2f} | {lcpu:>4.0f}/{ccpu:<4.0f}")
print("ratio = lutkit / llama.cpp; cpu% = median (user+sys)/elapsed of the whole process "
      "(T=1 uncontended ~100%, T=2 ~200%; lower = the machine's other load took the cores)")
