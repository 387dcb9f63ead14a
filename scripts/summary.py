#!/usr/bin/env python3
"""Summary table of a lutkit_bench JSON file: kernel, policy, shape, time, GB/s, roofline
fraction, and speed-up over the baselines measured in the same run (same shape, N, threads,
cold/warm): ConvertDQ of the same bit width, and the float GEMV (cold)."""
import json
import sys


def parse(name):
    parts = name.split("/")
    if len(parts) < 6:
        return None
    kernel, pol, shape, n, thr, mode = parts[:6]
    return kernel, pol, shape, n, thr, mode


def main(path):
    data = json.load(open(path))
    rows, dram = [], {}
    for b in data["benchmarks"]:
        name = b["name"].replace("/real_time", "")
        if name.startswith("dram_read"):
            thr = name.split("threads:")[1].split("/")[0]
            dram[thr] = b.get("weight_GBps", 0)
            continue
        p = parse(name)
        if not p:
            continue
        unit = {"us": 1.0, "ms": 1e3, "ns": 1e-3}[b.get("time_unit", "us")]
        rows.append((p, b["real_time"] * unit, b.get("weight_GBps", 0), b.get("roofline", 0)))
    times = {r[0]: r[1] for r in rows}
    for thr, bw in sorted(dram.items()):
        print(f"measured DRAM read bandwidth, {thr} thread(s): {bw:.1f} GB/s")
    hdr = f"{'kernel':<12} {'policy':<36} {'shape':<11} {'N':>3} {'thr':>3} {'mode':<5} {'time us':>9} {'GB/s':>6} {'roofline':>8} {'vs ConvertDQ':>12} {'vs float':>8}"
    print(hdr)
    print("-" * len(hdr))
    for (kernel, pol, shape, n, thr, mode), t, gbps, roof in rows:
        bits = pol.split("_")[0]
        cdq = times.get(("convert_dq", f"{bits}_g64_asym_rowmajor", shape, n, thr, mode))
        flt = times.get(("float_gemv", "f32_dense", shape, n, thr, "cold"))
        s_cdq = f"{cdq / t:.2f}x" if cdq and kernel == "lut_gemv" else "-"
        s_flt = f"{flt / t:.2f}x" if flt and kernel != "float_gemv" and mode == "cold" else "-"
        print(f"{kernel:<12} {pol:<36} {shape:<11} {n.split(':')[1]:>3} {thr.split(':')[1]:>3} {mode:<5} "
              f"{t:9.1f} {gbps:6.1f} {roof:8.2f} {s_cdq:>12} {s_flt:>8}")


if __name__ == "__main__":
    main(sys.argv[1])
