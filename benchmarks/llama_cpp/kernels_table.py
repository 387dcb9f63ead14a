#!/usr/bin/env python3
"""Table of medians from kernels_bench JSON files: per type, N and T, ggml's and lutkit's time and
the ratio ggml / lutkit (above 1: lutkit faster) and, at N = 1, each side's time as a fraction of
a plain read of its own weight copies (read/<type>/<side>: the same loop over both sides' buffers);
then the load (the engine's pack of the blocks
to a new blob) against one memcpy of the same bytes into a buffer already touched, and against
one into a new buffer (both pay the first touch of new pages).

    python3 benchmarks/llama_cpp/kernels_table.py build/llama_cpp/results/kernels-*/*.json
"""
import json, re, sys, statistics as st

times, loads, memcpys, memcpys_new, reads = {}, {}, {}, {}, {}
for path in sys.argv[1:]:
    for b in json.load(open(path))["benchmarks"]:
        if b.get("run_type") != "iteration":
            continue
        m = re.match(r"^(ggml|lutkit)/(\w+)/n:(\d+)/threads:(\d+)", b["name"])
        if m:
            times.setdefault((m[2], int(m[3]), int(m[4]), m[1]), []).append(b["real_time"])
        m = re.match(r"^read/(\w+)/(ggml|lutkit)/threads:(\d+)", b["name"])
        if m:
            reads.setdefault((m[1], int(m[3]), m[2]), []).append(b["real_time"])
        m = re.match(r"^load/(\w+)/threads:(\d+)", b["name"])
        if m:
            loads.setdefault((m[1], int(m[2])), []).append(b["real_time"])
        m = re.match(r"^memcpy/(\w+)(/|$)", b["name"])
        if m:
            memcpys.setdefault(m[1], []).append(b["real_time"])
        m = re.match(r"^memcpy_new/(\w+)(/|$)", b["name"])
        if m:
            memcpys_new.setdefault(m[1], []).append(b["real_time"])
types = sorted({k[0] for k in times} | {k[0] for k in loads} | set(memcpys), key=lambda t: (t[0] != "q", t))
print("| type | N | T | ggml ms | lutkit ms | ggml / lutkit | read ms, ggml / lutkit buffers | ggml, lutkit: of own read |")
print("| --- | --- | --- | --- | --- | --- | --- | --- |")
for t in types:
    for n in (1, 128):
        for T in (1, 2):
            g, l = times.get((t, n, T, "ggml")), times.get((t, n, T, "lutkit"))
            if not g or not l:
                continue
            gm, lm = st.median(g), st.median(l)
            rg, rl = reads.get((t, T, "ggml")), reads.get((t, T, "lutkit"))
            rd = of = ""
            if n == 1 and rg and rl:
                rgm, rlm = st.median(rg), st.median(rl)
                rd, of = f"{rgm:.2f} / {rlm:.2f}", f"{rgm / gm:.2f}, {rlm / lm:.2f}"
            print(f"| {t.upper()} | {n} | {T} | {gm:.2f} | {lm:.2f} | {gm / lm:.2f} | {rd} | {of} |")

print()
print("| type | memcpy ms, touched / new buffer | load ms, 1 / 2 threads | memcpy / load, 1 / 2 threads | memcpy into new / load, 1 / 2 threads |")
print("| --- | --- | --- | --- | --- |")
for t in types:
    if t not in memcpys or (t, 1) not in loads or (t, 2) not in loads:
        continue
    c, l1, l2 = st.median(memcpys[t]), st.median(loads[(t, 1)]), st.median(loads[(t, 2)])
    cn = st.median(memcpys_new[t]) if t in memcpys_new else float("nan")
    print(f"| {t.upper()} | {c:.2f} / {cn:.2f} | {l1:.1f} / {l2:.1f} | {c / l1:.2f} / {c / l2:.2f} | {cn / l1:.2f} / {cn / l2:.2f} |")
