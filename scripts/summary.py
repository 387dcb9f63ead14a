#!/usr/bin/env python3
"""Summary table of a lutkit_bench JSON file: kernel, policy, shape, time, GB/s, roofline
fraction, and speed-up over the baselines measured in the same run (same shape, N, threads,
cold/warm): ConvertDQ of the same bit width, and the float GEMV (cold)."""
import json
import sys


def header(hdr):
    """A table's header line and its rule."""
    print(hdr)
    print("-" * len(hdr))


def peaks(data):
    """The machine's measured peaks, {(kind, threads): GFLOP/s}: the best repetition of each (a
    ceiling, taken beside the kernels), or the median where only aggregates were reported."""
    best, med = {}, {}
    for b in data["benchmarks"]:
        p = b["name"].replace("/real_time", "").split("/")
        if p[0] != "peak" or len(p) < 3:
            continue
        if b.get("run_type") == "aggregate":
            if b.get("aggregate_name") == "median":
                med[(p[1], p[2].replace("_median", ""))] = b.get("GFLOPs", 0)
        else:
            k = (p[1], p[2])
            best[k] = max(best.get(k, 0), b.get("GFLOPs", 0))
    return {**med, **best}


def parse(name):
    parts = name.split("/")
    if len(parts) < 6:
        return None
    kernel, pol, shape, n, thr, mode = parts[:6]
    return kernel, pol, shape, n, thr, mode


def gemv_rows(data):
    """The GEMV table's rows paired with their references of the same run (same shape, N, threads,
    cold/warm): ({threads field: DRAM read GB/s}, [dict(key=(kernel, policy, shape, n, thr, mode),
    time us, GB/s, roofline, and the reference times or None: cdq (ConvertDQ of the same bit width,
    LUT-GEMV rows), flt (float GEMV, cold), stream / sdot (stream_read / stream_read_dot of the same
    policy, LUT-GEMV and FusedDQ rows))])."""
    rows, dram = [], {}
    for b in data["benchmarks"]:
        name = b["name"].replace("/real_time", "")
        if name.startswith("dram_read"):
            thr = name.split("threads:")[1].split("/")[0]
            dram[thr] = b.get("weight_GBps", 0)
            continue
        p = parse(name)
        if not p or p[0] in ("aie", "peak", "dequant", "attention_decode", "attention_prefill", "attention_prefill_bf16",
                             "attention_prefill_avx512", "attention_prefill_bf16_avx512", "attention_naive", "kv_read",
                             "decode_gemv", "decode_gemv_target", "decode_read", "decode_read_dot") \
                or p[0].startswith(("dllm_", "ar_")):
            continue
        unit = {"us": 1.0, "ms": 1e3, "ns": 1e-3}[b.get("time_unit", "us")]
        rows.append((p, b["real_time"] * unit, b.get("weight_GBps", 0), b.get("roofline", 0)))
    rows = [r for r in rows if r[0][0] not in ("dequant_gemm", "convertdq_gemm", "loadfull_gemm")]
    times = {r[0]: r[1] for r in rows}
    out = []
    for (kernel, pol, shape, n, thr, mode), t, gbps, roof in rows:
        bits = pol.split("_")[0]
        cdq = times.get(("convert_dq", f"{bits}_g64_asym_rowmajor", shape, n, thr, mode))
        flt = times.get(("float_gemv", "f32_dense", shape, n, thr, "cold"))
        lut = kernel.startswith(("lut_gemv", "fused_dq_gemv"))
        out.append(dict(key=(kernel, pol, shape, n, thr, mode), time=t, gbps=gbps, roof=roof,
                        cdq=cdq if cdq and kernel == "lut_gemv" else None,
                        flt=flt if flt and kernel != "float_gemv" and mode == "cold" else None,
                        stream=(times.get(("stream_read", pol, shape, n, thr, mode)) or None) if lut else None,
                        sdot=(times.get(("stream_read_dot", pol, shape, n, thr, mode)) or None) if lut else None))
    return dram, out


def main(path):
    dram, rows = gemv_rows(json.load(open(path)))
    for thr, bw in sorted(dram.items()):
        print(f"measured DRAM read bandwidth, {thr} thread(s): {bw:.1f} GB/s")
    print("vs stream: time of a plain one-shot streaming read of the same cold bytes (stream_read) / the GEMV's time")
    print("vs s+dot: the same with the read doing the least work of a decode per byte (stream_read_dot)")
    header(f"{'kernel':<12} {'policy':<36} {'shape':<11} {'N':>3} {'thr':>3} {'mode':<5} {'time us':>9} {'GB/s':>6} {'roofline':>8} {'vs ConvertDQ':>12} {'vs float':>8} {'vs stream':>9} {'vs s+dot':>8}")
    for r in rows:
        (kernel, pol, shape, n, thr, mode), t, gbps, roof = r["key"], r["time"], r["gbps"], r["roof"]
        s_cdq = f"{r['cdq'] / t:.2f}x" if r["cdq"] else "-"
        s_flt = f"{r['flt'] / t:.2f}x" if r["flt"] else "-"
        s_str = f"{r['stream'] / t:.2f}" if r["stream"] else "-"
        s_dot = f"{r['sdot'] / t:.2f}" if r["sdot"] else "-"
        s_roof = f"{roof:8.2f}" if roof else f"{'-':>8}"
        print(f"{kernel:<12} {pol:<36} {shape:<11} {n.split(':')[1]:>3} {thr.split(':')[1]:>3} {mode:<5} "
              f"{t:9.1f} {gbps:6.1f} {s_roof} {s_cdq:>12} {s_flt:>8} {s_str:>9} {s_dot:>8}")


def decode_rows(data):
    """decode_gemv rows (medians where aggregated) with the plain reads of the same cold blob bytes
    over the same threads: [(method, policy, n, threads field, time us, GB/s, decode_read time or
    None, decode_read_dot time or None)], sorted as the table prints them."""
    rows, read, read_dot = [], {}, {}
    for b in data["benchmarks"]:
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        name = b["name"].replace("/real_time", "").replace("_median", "")
        p = name.split("/")
        unit = {"us": 1.0, "ms": 1e3, "ns": 1e-3}[b.get("time_unit", "us")]
        t = b["real_time"] * unit
        # (policy, shape, threads, cold / warm): the read of the same bytes, in the same state
        if p[0] == "decode_read" and len(p) >= 5:
            read[(p[1], p[2], p[3], p[4])] = t
        elif p[0] == "decode_read_dot" and len(p) >= 5:
            read_dot[(p[1], p[2], p[3], p[4])] = t
        elif p[0] in ("decode_gemv", "decode_gemv_target") and len(p) >= 7:
            # decode_gemv_target rows: the LUT-GEMV on one named kernel target ("lut@<target>")
            method = p[1] if p[0] == "decode_gemv" else "lut@" + p[1]
            rows.append((method, p[2], p[4].split(":")[1], p[5], t, b.get("weight_GBps", 0), (p[2], p[3], p[5], p[6])))
    return [(method, pol, n, thr if key[3] == "cold" else thr + " " + key[3], t, gbps, read.get(key), read_dot.get(key))
            for method, pol, n, thr, t, gbps, key in
            sorted(rows, key=lambda r: (r[1], r[6][1], int(r[2]), r[3], r[0]))]


def decode(path):
    """Decode table: decode_gemv by method and imported format (time, weight GB/s), as a fraction
    of a plain read of the same cold blob bytes over the same threads (decode_read) in the same run."""
    rows = decode_rows(json.load(open(path)))
    if not rows:
        return
    print()
    print("decode: vs read = time of a plain read of the same cold blob bytes (decode_read, same threads) / the kernel's;")
    print("        vs r+dot = the same with the read doing the least work of a decode per byte (decode_read_dot)")
    header(f"{'method':<9} {'policy':<36} {'N':>3} {'thr':>3} {'time us':>9} {'GB/s':>6} {'vs read':>8} {'vs r+dot':>8}")
    for method, pol, n, thr, t, gbps, rd, rdd in rows:
        s_rd = f"{rd / t:.2f}" if rd else "-"
        s_rdd = f"{rdd / t:.2f}" if rdd else "-"
        print(f"{method:<9} {pol:<36} {n:>3} {thr.split(':')[1]:>3} {t:9.1f} {gbps:6.1f} {s_rd:>8} {s_rdd:>8}")


def prefill_rows(data):
    """The prefill rows: ({(kind, threads field): peak GFLOP/s}, [GEMM rows: dict(kernel, pol, shape,
    n, thr, act, time ms, gflops, of_peak, best GFLOP/s, cdq / lf: the ConvertDQ / LoadFull row's
    time on the same W<bits> g64 asym weights for a dequant_gemm row, else None)], {dequantization
    (source, policy, shape, thr, out): Gweights/s})."""
    peak, gemm, deq = {}, {}, {}
    for b in data["benchmarks"]:
        name = b["name"].replace("/real_time", "").replace("/iterations:5", "")
        p = name.split("/")
        if p[0] == "peak":
            peak[(p[1], p[2])] = b.get("GFLOPs", 0)
        elif p[0] in ("dequant_gemm", "convertdq_gemm", "loadfull_gemm") and len(p) >= 7:
            gemm[(p[0], p[1], p[2], p[3], p[4], p[6])] = (b["real_time"], b.get("GFLOPs", 0), b.get("of_peak", 0),
                                                       b.get("best_GFLOPs", 0))
        elif p[0] == "dequant" and len(p) >= 6:
            deq[(p[1], p[2], p[3], p[4], p[5])] = b.get("Gweights", 0)
    rows = []
    for (k, pol, shape, n, thr, act), (t, gf, op, best) in sorted(gemm.items()):
        bits = pol.split("_")[0]
        cdq = gemm.get(("convertdq_gemm", f"{bits}_g64_asym_rowmajor", shape, n, thr, act))
        dense = {"act:fp32": "f32_dense", "act:bf16": "bf16_dense"}.get(act, "u8_dense")
        lf = gemm.get(("loadfull_gemm", dense, shape, n, thr, act))
        # the baselines are W<bits> g64 asym weights: compare only the same weights
        same = "_g64_asym_" in pol
        rows.append(dict(kernel=k, pol=pol, shape=shape, n=n, thr=thr, act=act, time=t, gflops=gf, of_peak=op,
                         best=best, cdq=cdq[0] if cdq and k == "dequant_gemm" and same else None,
                         lf=lf[0] if lf and k == "dequant_gemm" and same else None))
    return peak, rows, deq


def prefill(path):
    """Prefill tables: GEMMs (GFLOP/s: mean and fastest iteration; fraction of the measured peak, LUT dequant vs ConvertDQ vs
    LoadFull on the same micro-kernel) and dequantization throughput (LUT vs ConvertDQ)."""
    data = json.load(open(path))
    peak, gemm, deq = prefill_rows(data)
    # "of peak": GFLOP/s over the run's peak of the paradigm at the same threads (peaks(): its best
    # repetition, or its median where only aggregates were reported), not the rows' of_peak counter,
    # which a repetition run before any peak repetition lacks (its aggregates then count it as 0)
    ceil = peaks(data)
    kinds = {"int8": "vnni_int8", "int8g": "vnni_int8", "bf16": "bf16_dot", "fp32": "fp32_fma"}
    for r in gemm:
        act, _, agg = r["act"].split(":")[1].partition("_")
        c = ceil.get((kinds.get(act, ""), r["thr"]))
        if c and agg in ("", "median", "mean"):
            r["of_peak"] = r["gflops"] / c
    if peak:
        print()
        print("measured peak (GFLOP/s): " + ", ".join(f"{k}/{t} {v:.0f}" for (k, t), v in sorted(peak.items())))
    if gemm:
        print()
        header(f"{'kernel':<15} {'weights':<34} {'shape':<11} {'N':>4} {'thr':>3} {'act':<10} {'ms':>8} {'GFLOP/s':>8} {'best':>6} {'of peak':>7} {'vs ConvertDQ':>12} {'vs LoadFull':>11}")
        for r in gemm:
            t = r["time"]
            s_c = f"{r['cdq'] / t:.2f}x" if r["cdq"] else "-"
            s_l = f"{r['lf'] / t:.2f}x" if r["lf"] else "-"
            print(f"{r['kernel']:<15} {r['pol']:<34} {r['shape']:<11} {r['n'].split(':')[1]:>4} {r['thr'].split(':')[1]:>3} "
                  f"{r['act'].split(':')[1]:<10} {t:8.1f} {r['gflops']:8.1f} {r['best']:6.0f} {r['of_peak']:7.2f} {s_c:>12} {s_l:>11}")
    if deq:
        print()
        print(f"{'dequantization':<48} {'thr':>3} {'out':<9} {'Gweights/s':>10} {'LUT / ConvertDQ':>15}")
        for (src, pol, shape, thr, out), gw in sorted(deq.items()):
            if src != "lut":
                continue
            bits = pol.split("_")[0]
            c = deq.get(("convertdq", f"{bits}_g64_asym_rowmajor", shape, thr, out))
            print(f"{pol + ' ' + shape:<48} {thr.split(':')[1]:>3} {out:<9} {gw:10.2f} {(f'{gw / c:.2f}x' if c else '-'):>15}")


def sampling_rows(data):
    """The dLLM step and AR sampler rows with the baselines of the same run (medians where
    aggregated): (dLLM [(case, threads, time us, logits GB/s, read / multi-pass / Gumbel time or
    None)], AR [(B, V, chain, threads field, mode, time us, logits GB/s, read time or None, sort
    baseline time or None)])."""
    unit = {"us": 1.0, "ms": 1e3, "ns": 1e-3, "s": 1e6}
    runs = {}
    for b in data["benchmarks"]:
        name = b["name"]
        if not name.startswith(("dllm_", "ar_")):
            continue
        agg = b.get("aggregate_name", "")
        if agg and agg != "median":
            continue
        name = name.replace("/real_time", "").replace("_median", "")
        if b.get("run_type") == "iteration" and name in runs and runs[name][1]:
            continue  # a median was seen already
        runs[name] = (b["real_time"] * unit[b.get("time_unit", "us")], bool(agg), b.get("logits_GBps", 0))
    t = {k: v[0] for k, v in runs.items()}
    dl, ar = [], []
    for k in sorted(k for k in t if k.startswith("dllm_sample/")):
        rest = k[len("dllm_sample/"):]
        case, thr = rest.rsplit("/threads:", 1)
        dl.append((case, thr, t[k], runs[k][2], t.get("dllm_read/" + rest), t.get("dllm_multipass/" + rest),
                   t.get("dllm_sample_gumbel/" + rest)))
    for k in sorted(k for k in t if k.startswith("ar_sample/")):
        parts = k.split("/")  # ar_sample, B:, V:, chain, threads:, mode
        if len(parts) < 6:
            continue
        _, bb, vv, chain, thr, mode = parts[:6]
        rd = t.get(f"ar_read/{bb}/{vv}/{thr}/{mode}")
        srt = t.get(f"ar_partial_sort/{bb}/{vv}/{chain}/{thr}/{mode}") or t.get(f"ar_full_sort/{bb}/{vv}/{chain}/{thr}/{mode}")
        ar.append((bb, vv, chain, thr, mode, t[k], runs[k][2], rd, srt))
    return dl, ar


def sampling(path):
    """Sampling tables: the dLLM step and the AR sampler, time, logits GB/s, fraction of a plain read
    of the same logits bytes (read time / time) and speed-up over the baselines of the same run
    (multi-pass dLLM step; partial-sort top-k / full-sort top-p AR). With repetitions, the medians."""
    dl, ar = sampling_rows(json.load(open(path)))
    if dl:
        print()
        header(f"{'dLLM step':<44} {'thr':>3} {'ms':>8} {'GB/s':>6} {'of read':>7} {'vs multi-pass':>13} {'Gumbel ms':>9}")
        for case, thr, t, gbps, rd, mp, gb in dl:
            print(f"{case:<44} {thr:>3} {t / 1e3:8.2f} {gbps:6.1f} "
                  f"{(f'{rd / t:.2f}' if rd else '-'):>7} {(f'{mp / t:.1f}x' if mp else '-'):>13} "
                  f"{(f'{gb / 1e3:.2f}' if gb else '-'):>9}")
    if ar:
        print()
        header(f"{'AR sample':<44} {'thr':>3} {'mode':<5} {'us':>9} {'GB/s':>6} {'of read':>7} {'vs sort':>8}")
        for bb, vv, chain, thr, mode, t, gbps, rd, srt in ar:
            print(f"{bb + '/' + vv + '/' + chain:<44} {thr.split(':')[1]:>3} {mode:<5} {t:9.1f} {gbps:6.1f} "
                  f"{(f'{rd / t:.2f}' if rd else '-'):>7} {(f'{srt / t:.1f}x' if srt else '-'):>8}")


def attention_rows(data):
    """Attention kernel rows (medians where aggregated) paired with their references: [(kernel,
    shape, time us, K/V GB/s, GFLOP/s, read: the kv_read time of the same K/V bytes (decode rows),
    peak: peak/fp32_fma, or peak/bf16_dot for the bf16 prefill, GFLOP/s at the same threads (prefill
    rows), naive: the naive two-pass time of the same shape; each None where absent)]."""
    peak, rows = peaks(data), {}
    multi = any(b.get("run_type") == "aggregate" for b in data["benchmarks"])
    for b in data["benchmarks"]:
        name = b["name"].replace("/real_time", "").replace("/iterations:5", "")
        if multi and not (b.get("run_type") == "aggregate" and b.get("aggregate_name") == "median"):
            continue
        name = name.replace("_median", "")
        p = name.split("/")
        if p[0] in ("attention_decode", "attention_prefill", "attention_prefill_bf16", "attention_prefill_avx512",
                    "attention_prefill_bf16_avx512", "attention_naive", "kv_read") and len(p) >= 10:
            unit = {"us": 1.0, "ms": 1e3, "ns": 1e-3}[b.get("time_unit", "us")]
            rows[(p[0], "/".join(p[1:]))] = (b["real_time"] * unit, b.get("KV_GBps", 0), b.get("GFLOPs", 0))
    out = []
    for (k, shape), (t, gb, gf) in sorted(rows.items()):
        if k not in ("attention_decode", "attention_prefill", "attention_prefill_bf16", "attention_prefill_avx512",
                     "attention_prefill_bf16_avx512"):
            continue
        thr = [x for x in shape.split("/") if x.startswith("threads:")][0]
        # batch rows: the read of the shared prefix (the sequences' own 32 keys are not in it)
        rd = rows.get(("kv_read", "/".join(("q:1" if x.startswith("q:") else x) for x in shape.split("/"))))
        nv = rows.get(("attention_naive", shape))
        # the default (fp32) prefill against the fp32 FMA peak, the bf16 opt-in against the bf16 one
        pk = peak.get(("bf16_dot" if k.startswith("attention_prefill_bf16") else "fp32_fma", thr))
        out.append((k, shape, t, gb, gf, rd[0] if rd and k == "attention_decode" else None,
                    pk if pk and k != "attention_decode" else None, nv[0] if nv else None))
    return out


def attention(path):
    """Attention table: decode (time, K/V GB/s, fraction of a plain read of the same K/V bytes in the
    same run) and prefill (GFLOP/s over all Lq x L query-key pairs, fraction of the best repetition
    of peak/fp32_fma, or peak/bf16_dot for the bf16 opt-in, at the same thread count), both against the naive two-pass baseline of the same shape (decode: batch 1 only)."""
    rows = attention_rows(json.load(open(path)))
    if not rows:
        return
    print()
    header(f"{'attention':<22} {'shape':<62} {'time us':>10} {'KV GB/s':>8} {'GFLOP/s':>8} {'vs read':>8} {'of peak':>8} {'vs naive':>9}")
    for k, shape, t, gb, gf, rd, pk, nv in rows:
        s_rd = f"{rd / t:.2f}" if rd else "-"
        s_pk = f"{gf / pk:.2f}" if pk else "-"
        s_nv = f"{nv / t:.1f}x" if nv else "-"
        print(f"{k:<22} {shape:<62} {t:10.1f} {gb:8.2f} {gf:8.1f} {s_rd:>8} {s_pk:>8} {s_nv:>9}")


def load(path):
    """Load table: import + pack of one tensor, pack alone, pack straight from the blocks (into a
    new blob, and into one reused), and a new blob's first touch, as a fraction of a memcpy of the
    packed blob's bytes into a touched buffer (load_memcpy) in the same run."""
    data = json.load(open(path))
    # the memcpy of each blob, by the policy's bit width (w4: Q4_0 and the imported W4; w8: Q8_0)
    rows, cp = [], {}
    for b in data["benchmarks"]:
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        name = b["name"].replace("/real_time", "").replace("_median", "")
        p = name.split("/")
        unit = {"us": 1e-3, "ms": 1.0, "ns": 1e-6, "s": 1e3}[b.get("time_unit", "ms")]
        t = b["real_time"] * unit
        if p[0] == "load_memcpy":
            cp[p[1].split("_")[0]] = t
        elif p[0] in ("pack", "import_pack"):
            rows.append((p[0], p[1], p[2], p[3], t, "w4"))
        elif p[0] in ("pack_q4_0", "pack_q4_0_into", "pack_q8_0", "pack_q8_0_into"):
            blk = p[0].split("_")[1] + "_0"
            rows.append((p[0], blk + " blocks", p[1], p[2], t, "w8" if blk == "q8_0" else "w4"))
        elif p[0] == "load_pages":
            rows.append((p[0], "(new blob, first touch)", p[1], "threads:1", t, "w4"))
    if not rows:
        return
    print()
    print("load: vs memcpy = time of a memcpy of the packed blob's bytes / the time (load_memcpy of that blob, same run)")
    header(f"{'what':<14} {'weights':<32} {'shape':<11} {'thr':>3} {'ms':>9} {'vs memcpy':>9}")
    for what, pol, shape, thr, t, w in sorted(rows):
        c = cp.get(w)
        print(f"{what:<14} {pol:<32} {shape:<11} {thr.split(':')[1]:>3} {t:9.2f} {(f'{c / t:.3f}' if c else '-'):>9}")


def aie_rows(data):
    """target::aie rows: [(name, host time us, {figure: modelled value} (the aie_modelled_* counters),
    {figure: published value} (the published_* ones), label)]."""
    rows = []
    for b in data["benchmarks"]:
        if not b["name"].startswith("aie/"):
            continue
        unit = {"us": 1.0, "ms": 1e3, "ns": 1e-3}[b.get("time_unit", "us")]
        rows.append((b["name"], b["real_time"] * unit,
                     {k[len("aie_modelled_"):]: v for k, v in b.items() if k.startswith("aie_modelled_")},
                     {k[len("published_"):]: v for k, v in b.items() if k.startswith("published_")}, b.get("label", "")))
    return rows


def aie(path):
    """target::aie rows: the host's measured time beside the modelled figures (aie_modelled_*) and
    the published ones (published_*)."""
    rows = aie_rows(json.load(open(path)))
    if not rows:
        return
    print()
    print("aie: MODELLED figures (no AIE hardware or simulator here; docs/targets/aie.md), beside the time of the host's")
    print("same kernel (or of evaluating the model, where the label says model only)")
    header(f"{'row':<58} {'time us':>10}  modelled / published")
    for name, t, modelled, published, label in rows:
        figs = [f"{k}={v:.4g}" for k, v in modelled.items()] + [f"published_{k}={v:.4g}" for k, v in published.items()]
        print(f"{name:<58} {t:10.1f}  {'; '.join(figs)}  [{label}]")


if __name__ == "__main__":
    main(sys.argv[1])
    decode(sys.argv[1])
    prefill(sys.argv[1])
    sampling(sys.argv[1])
    attention(sys.argv[1])
    load(sys.argv[1])
    aie(sys.argv[1])
