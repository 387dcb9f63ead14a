#!/usr/bin/env python3
"""The main job's report: build/report/index.html, PNG figures beside the text summary.

Reads the Google Benchmark JSON of lutkit_bench (scripts/run.sh writes build/release/bench.json),
the engine lines of lutkit_llm (build/release/engine.txt) and, where given, static-proxy output
of scripts/hvx_proxy.sh / scripts/isa_proxy.py. The ratios are scripts/summary.py's pairings (each
kernel row against its plain read or measured peak of the same run). A figure whose rows are
missing is left out, and the page says which rows it lacked. Beside the page, manifest.json lists
what each figure plotted (series and point counts) and which figures were left out.

  scripts/report.py BENCH_JSON [--engine FILE] [--proxy FILE]... [--out DIR]
                    [--bench-cmd TEXT] [--cpu TEXT] [--commit TEXT]
"""
import argparse
import contextlib
import html
import io
import json
import os
import re
import shlex
import subprocess
import sys
import textwrap

try:
    import matplotlib
except ModuleNotFoundError:
    # Debian's python3-matplotlib serves the system interpreter; a python3 earlier on PATH (pyenv,
    # a virtualenv) does not see it: run once more under /usr/bin/python3
    if os.path.exists("/usr/bin/python3") and os.path.realpath(sys.executable) != os.path.realpath("/usr/bin/python3") \
            and not os.environ.get("LUTKIT_REPORT_REEXEC"):
        os.environ["LUTKIT_REPORT_REEXEC"] = "1"
        os.execv("/usr/bin/python3", ["/usr/bin/python3", *sys.argv])
    sys.exit("report.py: matplotlib is missing (Debian package python3-matplotlib; scripts/deps.sh installs it)")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import summary  # noqa: E402

THREAD_COLORS = {"1": "tab:blue", "2": "tab:orange", "4": "tab:green", "8": "tab:red"}


class Missing(Exception):
    """A figure's rows are absent: the message says which."""


def field(parts, prefix):
    """The value of the name segment 'prefix:value', or None."""
    return next((x.split(":", 1)[1] for x in parts if x.startswith(prefix + ":")), None)


def short_policy(pol):
    """w4_g64_asym_lut4i8_host_b64 -> w4_g64_asym (format, group, symmetry: what a reader compares)."""
    return "_".join(pol.split("_")[:3])


def wrap_path(text, width):
    """text on lines of about width characters, broken only after a '/' or a space."""
    lines, cur = [], ""
    for part in re.findall(r"[^/ ]+[/ ]?", text):
        if cur and len(cur) + len(part) > width:
            lines.append(cur.rstrip())
            cur = ""
        cur += part
    return "\n".join(lines + [cur.rstrip()])


def hbars(ax, labels, groups, xlabel, log=False, ref=None, ref_label=None):
    """Horizontal grouped bars: labels top to bottom, groups [(name, color, [value or None])]; value
    written beside each bar. ref: a vertical reference line (e.g. 1 = the plain read)."""
    n, k = len(labels), len(groups)
    h = 0.8 / k
    for gi, (name, color, vals) in enumerate(groups):
        ys = [i + (gi - (k - 1) / 2) * h for i in range(n)]
        pts = [(y, v) for y, v in zip(ys, vals) if v is not None]
        if not pts:
            continue
        ax.barh([y for y, _ in pts], [v for _, v in pts], height=h * 0.9, color=color, label=name)
        for y, v in pts:
            ax.text(v, y, f" {v:.3g}", va="center", fontsize=7)
    ax.set_yticks(range(n))
    ax.set_yticklabels(labels, fontsize=8)
    ax.set_ylim(n - 0.5, -0.5)
    if log:
        ax.set_xscale("log")
    if ref is not None:
        ax.axvline(ref, color="k", ls="--", lw=1, label=ref_label)
    # room right of the longest bar for its value and the legend
    vmax = max([v for _, _, vals in groups for v in vals if v is not None] + [ref or 0])
    ax.set_xlim(right=vmax * 6 if log else vmax * 1.7)
    ax.set_xlabel(xlabel)
    ax.grid(axis="x", alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")


def log2_axis(ax):
    """A base-2 log x axis ticked at the plotted x values, written plainly (512, 4096, 32768)."""
    xs = sorted({float(x) for line in ax.get_lines() if not line.get_label().startswith("_") for x in line.get_xdata()})
    ax.set_xscale("log", base=2)
    ax.set_xticks(xs)
    ax.set_xticklabels([f"{x:g}" if x < 1024 else f"{x / 1024:g}k" for x in xs])
    ax.minorticks_off()


# ---- figures: each returns (matplotlib figure, {series label: [(x, y)]}, threads, caption) or raises Missing


def fig_decode(data):
    """Decode roofline: each decode kernel's weight GB/s at N = 1 (cold) against the GB/s of a plain
    read of the same bytes in the same run (stream_read for lut_gemv / fused_dq_gemv, decode_read for
    decode_gemv): one row per kernel and format, one column per thread count, the cell's colour the
    fraction of the read."""
    dram, gemv = summary.gemv_rows(data)
    pts = {}  # (kernel, policy/shape) -> {thr: (kernel GB/s, read GB/s)}
    for r in gemv:
        kernel, pol, shape, n, thr, mode = r["key"]
        if n == "n:1" and mode == "cold" and r["stream"] and r["gbps"]:
            pts.setdefault((kernel, f"{short_policy(pol)}  {shape}"), {})[thr.split(":")[1]] = \
                (r["gbps"], r["gbps"] * r["time"] / r["stream"])
    for method, pol, n, thr, t, gbps, rd, _ in summary.decode_rows(data):
        if n == "1" and rd and gbps and not thr.endswith("warm"):
            pts.setdefault((f"decode_gemv {method}", pol), {})[thr.split(":")[1]] = (gbps, gbps * t / rd)
    if not pts:
        raise Missing("no N = 1 cold lut_gemv / fused_dq_gemv rows with their stream_read, nor decode_gemv rows "
                      "with their decode_read")
    rows = sorted(pts)
    thrs = sorted({t for d in pts.values() for t in d}, key=int)
    fig, ax = plt.subplots(figsize=(4 + 3.2 * len(thrs), 1.4 + 0.28 * len(rows)))
    frac = [[pts[r][t][0] / pts[r][t][1] if t in pts[r] else float("nan") for t in thrs] for r in rows]
    im = ax.imshow(frac, cmap="RdYlGn", vmin=0, vmax=1.2, aspect="auto")
    series = {f"{t} thread(s)": [] for t in thrs}
    for i, r in enumerate(rows):
        for j, t in enumerate(thrs):
            if t in pts[r]:
                k, rd = pts[r][t]
                ax.text(j, i, f"{k:.1f} of {rd:.1f} GB/s  ({k / rd:.2f})", ha="center", va="center", fontsize=7.5)
                series[f"{t} thread(s)"].append((rd, k))
        if i and rows[i - 1][0] != r[0]:
            ax.axhline(i - 0.5, color="k", lw=1.2)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([f"{k}: {p}" for k, p in rows], fontsize=7.5)
    ax.set_xticks(range(len(thrs)))
    ax.set_xticklabels([f"{t} thread(s)" + (f"\n(dram_read {dram['threads:' + t]:.1f} GB/s)" if "threads:" + t in dram
                                            else "") for t in thrs])
    ax.xaxis.tick_top()
    fig.colorbar(im, ax=ax, shrink=0.5, pad=0.02, label="kernel GB/s / read GB/s of the same bytes")
    ax.set_title("Decode roofline (N = 1, cold): kernel weight GB/s of the plain read of the same bytes", pad=28)
    return fig, series, thrs, ("Each cell: the kernel's weight GB/s, of the GB/s a plain streaming read of the same "
                               "packed bytes reaches in the same run and threads (stream_read for lut_gemv / "
                               "fused_dq_gemv, decode_read for decode_gemv); colour: the fraction (green = at the read).")


def fig_prefill(data):
    """Prefill: GEMM GFLOP/s as a fraction of the same run's measured peak of its paradigm (int8:
    peak/vnni_int8, bf16: peak/bf16_dot, fp32: peak/fp32_fma): one heatmap per activation type, one
    row per kernel and weight format, one column per thread count and N (ascending)."""
    _, gemm, _ = summary.prefill_rows(data)
    gemm = [r for r in gemm if r["of_peak"]]
    if not gemm:
        raise Missing("no dequant_gemm / convertdq_gemm / loadfull_gemm rows with an of_peak counter")
    order = {"act:int8": 0, "act:int8g": 1, "act:bf16": 2, "act:fp32": 3}
    acts = sorted({r["act"] for r in gemm}, key=lambda a: (order.get(a, 9), a))
    num = lambda r, k: int(r[k].split(":")[1])  # noqa: E731
    panels = []
    for act in acts:
        rs = [r for r in gemm if r["act"] == act]
        cols = sorted({(num(r, "thr"), num(r, "n")) for r in rs})
        rows = sorted({(r["kernel"], r["pol"], r["shape"]) for r in rs},
                      key=lambda k: ({"dequant_gemm": 0, "convertdq_gemm": 1}.get(k[0], 2), k[1], k[2]))
        val = {((r["kernel"], r["pol"], r["shape"]), (num(r, "thr"), num(r, "n"))): r["of_peak"] for r in rs}
        panels.append((act, rows, cols, val))
    nc = min(2, len(panels))
    grid_rows = [panels[i:i + nc] for i in range(0, len(panels), nc)]
    heights = [max(len(p[1]) for p in g) + 2 for g in grid_rows]
    width = max(sum(4.5 + 0.9 * len(p[2]) for p in g) for g in grid_rows)
    fig, axes = plt.subplots(len(grid_rows), nc, figsize=(width + 1, 0.8 + 0.32 * sum(heights)), squeeze=False,
                             gridspec_kw={"height_ratios": heights})
    series = {}
    for gi, g in enumerate(grid_rows):
        for ax, (act, rows, cols, val) in zip(axes[gi], g):
            im = ax.imshow([[val.get((r, c), float("nan")) for c in cols] for r in rows], cmap="viridis", vmin=0,
                           vmax=1, aspect="auto")
            for i, r in enumerate(rows):
                for j, c in enumerate(cols):
                    if (r, c) in val:
                        v = val[(r, c)]
                        ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=8.5, color="w" if v < 0.6 else "k")
                        series.setdefault(f"{act} {r[0]} {r[1]} {c[0]} thr", []).append((c[1], v))
            ax.set_yticks(range(len(rows)))
            ax.set_yticklabels([f"{k} {p}  {sh}" for k, p, sh in rows], fontsize=8)
            ax.set_xticks(range(len(cols)))
            ax.set_xticklabels([f"{t} thr\nN = {n}" for t, n in cols], fontsize=8)
            ax.xaxis.tick_top()
            ax.set_title(f"activations {act.split(':')[1]}", fontsize=10)
        for ax in axes[gi][len(g):]:
            ax.set_axis_off()
    fig.colorbar(im, ax=axes[-1][len(grid_rows[-1]) - 1], shrink=0.8, pad=0.02, label="fraction of the peak")
    fig.suptitle("Prefill GEMM: fraction of the measured peak per format and activation paradigm")
    thrs = sorted({r["thr"].split(":")[1] for r in gemm}, key=int)
    return fig, series, thrs, ("Each cell: GFLOP/s / the same run's register-only peak of the activation paradigm "
                               "(int8 and int8g, int8 per scale group: peak/vnni_int8; bf16: peak/bf16_dot; fp32: "
                               "peak/fp32_fma) at the row's thread count (the benchmark's of_peak counter); empty: not "
                               "measured in this run.")


def fig_attention(data):
    """Attention: decode as a fraction of a plain read of the same K/V bytes over context length;
    prefill as a fraction of the peak of its precision (fp32: peak/fp32_fma, bf16: peak/bf16_dot)."""
    rows = summary.attention_rows(data)
    dec = [r for r in rows if r[0] == "attention_decode" and r[5]]
    pre = [r for r in rows if r[0] != "attention_decode" and r[6]]
    if not dec and not pre:
        raise Missing("no attention_decode rows with their kv_read, nor attention_prefill(_bf16) rows with a peak/ row")
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.8), squeeze=False)
    series = {}
    ax = axes[0][0]
    if dec:
        lines = {}
        for k, shape, t, gb, gf, rd, pk, nv in dec:
            p = shape.split("/")
            key = (p[6], field(p, "q"), field(p, "threads"), p[-1])
            lines.setdefault(key, []).append((int(field(p, "kv")), rd / t))
        for (prec, q, thr, mode), pts in sorted(lines.items()):
            pts.sort()
            lab = f"{prec} K/V, batch {q}, {thr} thr, {mode}"
            ax.plot([x for x, _ in pts], [y for _, y in pts], marker="o", label=lab,
                    ls="-" if q == "1" else "--", color=THREAD_COLORS.get(thr))
            series["decode " + lab] = pts
        log2_axis(ax)
        ax.set_xlabel("context length (keys)")
        ax.set_ylabel("plain read time of the K/V / kernel time")
        ax.axhline(1, color="k", ls=":", lw=1)
        ax.legend(fontsize=7)
        ax.set_title("decode: fraction of the K/V read")
    else:
        ax.text(0.5, 0.5, "no attention_decode rows with kv_read", ha="center", transform=ax.transAxes)
    ax.grid(alpha=0.3)
    ax = axes[0][1]
    if pre:
        labels, fp32, bf16 = [], [], []
        shapes = sorted({(r[1]) for r in pre})
        for shape in shapes:
            labels.append(shape.replace("/warm", "").replace("/", " "))
            f = [r[4] / r[6] for r in pre if r[1] == shape and r[0] == "attention_prefill"]
            b = [r[4] / r[6] for r in pre if r[1] == shape and r[0] == "attention_prefill_bf16"]
            fp32.append(f[0] if f else None)
            bf16.append(b[0] if b else None)
        hbars(ax, [wrap_path(s, 30) for s in labels], [("fp32 (of peak/fp32_fma)", "tab:blue", fp32),
                                                          ("bf16 (of peak/bf16_dot)", "tab:purple", bf16)],
              "fraction of the measured peak")
        series["prefill fp32"] = [(v, i) for i, v in enumerate(fp32) if v is not None]
        series["prefill bf16"] = [(v, i) for i, v in enumerate(bf16) if v is not None]
        ax.set_title("prefill: fraction of the peak per precision")
    else:
        ax.text(0.5, 0.5, "no attention_prefill rows with a peak", ha="center", transform=ax.transAxes)
    fig.suptitle("Attention")
    fig.tight_layout()
    thrs = sorted({field(r[1].split("/"), "threads") for r in dec + pre}, key=int)
    return fig, series, thrs, "Decode: kv_read of the same K/V bytes (same run); prefill: GFLOP/s / the peak at the same threads."


def fig_sampling(data):
    """Sampling: each sampler's time against a plain read of its logits (read time / time), beside
    the baselines' (multi-pass dLLM step, Gumbel; partial / full sort AR); log scale."""
    dl, ar = summary.sampling_rows(data)
    dl = [r for r in dl if r[4]]
    ar = [r for r in ar if r[7]]
    if not dl and not ar:
        raise Missing("no dllm_sample rows with their dllm_read, nor ar_sample rows with their ar_read")
    panels = [p for p in (("dLLM step", dl), ("AR sampler", ar)) if p[1]]
    nrows = [len(p[1]) for p in panels]
    fig, axes = plt.subplots(1, len(panels), figsize=(6.8 * len(panels), 1.6 + 0.5 * max(nrows)), squeeze=False)
    series = {}
    thrs = set()
    for ax, (title, rows) in zip(axes[0], panels):
        if title == "dLLM step":
            labels = [f"{case.split('/')[-1]} logits, {case.rsplit('/', 1)[0]}, {thr} thr" for case, thr, *_ in rows]
            groups = [("dllm_sample", "tab:blue", [rd / t for _, _, t, _, rd, _, _ in rows]),
                      ("Gumbel step", "tab:cyan", [rd / gb if gb else None for _, _, _, _, rd, _, gb in rows]),
                      ("multi-pass baseline", "0.6", [rd / mp if mp else None for _, _, _, _, rd, mp, _ in rows])]
            thrs |= {r[1] for r in rows}
        else:
            many_v = len({r[1] for r in rows}) > 1
            labels = [f"{chain}, {bb.replace(':', ' ')}" + (f", {vv.replace(':', ' ')}" if many_v else "")
                      + f", {thr.split(':')[1]} thr, {mode}" for bb, vv, chain, thr, mode, *_ in rows]
            groups = [("ar_sample", "tab:blue", [rd / t for *_, t, _, rd, _ in rows]),
                      ("sort baseline", "0.6", [rd / s if s else None for *_, rd, s in rows])]
            thrs |= {r[3].split(":")[1] for r in rows}
        hbars(ax, labels, groups, "plain read of the logits / time (1 = read speed)", log=True, ref=1,
              ref_label="the read")
        ax.set_title(title if title != "AR sampler" else
                     title + " (fp32 logits" + ("" if many_v else f", {rows[0][1].replace(':', ' = ')}") + ")")
        for name, _, vals in groups:
            series[f"{title} {name}"] = [(v, i) for i, v in enumerate(vals) if v is not None]
    fig.suptitle("Sampling: fraction of a plain read of the logits")
    return fig, series, sorted(thrs, key=int), "Reads: dllm_read / ar_read of the same logits bytes, same run and threads."


def parse_engine(path):
    """lutkit_llm result lines, each under its scripts/run.sh header ('<shape> <type>, <t> thread(s):'):
    [dict(model, threads, prompt, ttft, prefill, decode tok/s, context, roofline or None, command or None)]."""
    out, model, threads, cmd = [], None, None, None
    for line in open(path):
        line = line.strip()
        m = re.match(r"^(\S+) (\S+), (\d+) thread\(s\):$", line)
        if m:
            model, threads = f"{m.group(1)} {m.group(2)}", m.group(3)
            continue
        if line.startswith("$ "):
            cmd = line[2:]
            continue
        m = re.search(r"prompt (\d+) tokens: TTFT ([\d.]+) s, prefill ([\d.]+) tok/s \| decode (\d+) tokens at context "
                      r"(\d+): ([\d.]+) tok/s(?:, ([\d.]+) of the memory roofline)?", line)
        if m and model:
            out.append(dict(model=model, threads=threads, prompt=int(m.group(1)), ttft=float(m.group(2)),
                            prefill=float(m.group(3)), context=int(m.group(5)), tps=float(m.group(6)),
                            roof=float(m.group(7)) if m.group(7) else None, command=cmd))
    return out


def fig_engine(runs):
    """The model runner: decode tokens/s over context, TTFT over prompt length (fresh prompts only:
    a --fill run's prompt follows a filled cache) and the decode roofline fraction over context."""
    if not runs:
        raise Missing("no lutkit_llm result lines (scripts/run.sh's engine section)")
    fig, axes = plt.subplots(1, 3, figsize=(14, 4.6))
    series = {}
    keys = sorted({(r["model"], r["threads"]) for r in runs})
    markers = dict(zip(sorted({k[0] for k in keys}), "osD^v"))
    for si, (model, thr) in enumerate(keys):
        rs = sorted((r for r in runs if (r["model"], r["threads"]) == (model, thr)), key=lambda r: r["context"])
        lab = f"{model}, {thr} thr"
        st = dict(marker=markers[model], color=THREAD_COLORS.get(thr), ls="-" if markers[model] == "o" else "--")
        pts = [(r["context"], r["tps"]) for r in rs]
        axes[0].plot(*zip(*pts), label=lab, **st)
        series["decode tok/s " + lab] = pts
        pts = [(r["prompt"], r["ttft"]) for r in rs if r["context"] == r["prompt"]]
        if pts:
            axes[1].plot(*zip(*pts), label=lab, **st)
            for x, y in pts:
                axes[1].annotate(f"{y:.2f} s", (x, y), textcoords="offset points", fontsize=7, va="center",
                                 xytext=(8, 0) if si % 2 else (-8, 0), ha="left" if si % 2 else "right")
            series["TTFT " + lab] = pts
        pts = [(r["context"], r["roof"]) for r in rs if r["roof"] is not None]
        if pts:
            axes[2].plot(*zip(*pts), label=lab, **st)
            series["roofline " + lab] = pts
    axes[0].set(xlabel="context (tokens)", ylabel="decode tokens/s", title="decode over context")
    axes[1].set(xlabel="prompt length (tokens)", ylabel="time to first token (s)", title="TTFT over prompt length")
    axes[2].set(xlabel="context (tokens)", ylabel="plain read time of the bytes / decode time",
                title="decode roofline (weights + K/V read per token)")
    axes[2].axhline(1, color="k", ls=":", lw=1)
    for ax in axes:
        log2_axis(ax)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
        ax.set_ylim(bottom=0)
    fig.suptitle("The model runner (examples/llm, random-weight GGUF files)")
    fig.tight_layout()
    thrs = sorted({r["threads"] for r in runs}, key=int)
    return fig, series, thrs, ("TTFT: fresh prompts only (a --fill run's one-token prompt follows a filled cache). Roofline: "
                               "the engine's own start-up read of a 256 MiB buffer; above 1 = that read ran slower.")


def fig_aie(data):
    """target::aie: the models' figures (MODELLED, no hardware here) beside the published ones of the
    same rows (aie_modelled_X against published_X): kernels and megatiles as ratios, the Gemma 3
    decode and prefill over context as curves."""
    pairs = []  # (row name, figure, modelled, published)
    for name, _, mod, pub, _ in summary.aie_rows(data):
        for k, v in pub.items():
            if k in mod and v:
                pairs.append((name, k, mod[k], v))
    if not pairs:
        raise Missing("no aie/ rows carrying both aie_modelled_X and published_X counters")
    curves = [p for p in pairs if p[0].startswith(("aie/gemma3_decode/", "aie/gemma3_prefill/"))]
    single = [p for p in pairs if p not in curves]
    fig, axes = plt.subplots(1, 3, figsize=(14, 5.2), squeeze=False)
    axes = axes[0]
    series = {}
    if single:
        labels = [f"{n[len('aie/'):]} ({k})" for n, k, _, _ in single]
        vals = [m / p for _, _, m, p in single]
        hbars(axes[0], [wrap_path(x, 26) for x in labels], [("modelled / published", "tab:green", vals)],
              "modelled / published", ref=1, ref_label="published")
        axes[0].set_title("kernels and megatiles (MODELLED)")
        series["kernels modelled/published"] = [(v, i) for i, v in enumerate(vals)]
    else:
        axes[0].set_axis_off()
    for ax, kind, unit in ((axes[1], "gemma3_decode", "tokens/s"), (axes[2], "gemma3_prefill", "TTFT (s)")):
        rows = [p for p in curves if p[0].startswith(f"aie/{kind}/")]
        if not rows:
            ax.set_axis_off()
            continue
        for model in sorted({p[0].split("/")[2] for p in rows}):
            pts = sorted((int(field(p[0].split("/"), "ctx")), p[2], p[3]) for p in rows if p[0].split("/")[2] == model)
            line = ax.plot([x for x, _, _ in pts], [p for _, _, p in pts], "o-", label=f"{model} published")[0]
            ax.plot([x for x, _, _ in pts], [m for _, m, _ in pts], "s--", color=line.get_color(),
                    label=f"{model} MODELLED")
            series[f"{kind} {model} published"] = [(x, p) for x, _, p in pts]
            series[f"{kind} {model} modelled"] = [(x, m) for x, m, _ in pts]
        log2_axis(ax)
        ax.set(xlabel="context (tokens)", ylabel=unit, title=f"{kind.replace('_', ' ')}: MODELLED beside published")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("target::aie — MODELLED figures (no AIE hardware or simulator here) beside their published anchors")
    fig.tight_layout()
    return fig, series, [], "Modelled: the cycle and array models of docs/targets/aie.md; published: the papers' figures."


def parse_proxy(paths):
    """Static-proxy lines of scripts/isa_proxy.py (via scripts/hvx_proxy.sh or directly): HVX
    [(label, packets per 128 B, vlut16 per 128 B or None)] and other [(label, instructions, marks)]."""
    hvx, other = [], []
    for path in paths:
        for line in open(path):
            m = re.match(r"^(.*): inner loop (\d+) packets, (\d+) HVX instructions, (\d+) x (\S+); per 128 bytes: "
                         r"([\d.]+) packets", line)
            if m:
                b = int(m.group(2)) * 128 / float(m.group(6))  # bytes one iteration consumes
                vl = int(m.group(4)) * 128 / b if m.group(5) == "vlut16" else None
                # hvx_proxy.sh's --label text, before the demangled name
                head = re.split(r"\s+(?=\S*::)", m.group(1), maxsplit=1)[0] if "::" in m.group(1) else ""
                head = re.sub(r"(\s+(void|float|int|auto|unsigned|long|char|bool|short))+$", "", head).strip()
                hvx.append((head or short_fn(m.group(1)), float(m.group(6)), vl))
                continue
            m = re.match(r"^(.*): inner loop (\d+) instructions, (\d+) x (\S+)$", line.strip())
            if m:
                other.append((short_fn(m.group(1)), int(m.group(2)), f"{m.group(3)} x {m.group(4)}"))
    return hvx, other


def short_fn(name):
    """A demangled function name without return type, namespaces and arguments."""
    name = re.sub(r"\bvoid ", "", name)
    depth, cut = 0, len(name)
    for i, c in enumerate(name):
        depth += c == "<"
        depth -= c == ">"
        if c == "(" and depth == 0:
            cut = i
            break
    name = re.sub(r"\b\w+::", "", name[:cut]).replace("policy<", "")
    return name if len(name) <= 75 else name[:72] + "..."


def fig_static(hvx, other):
    """Targets without a device here: STATIC COUNTS from the disassembly. HVX: packets per 128 B of
    packed weights beside T-MAN's published vlut16 rate (0.5 cycles each: the lookups alone); other
    targets (SME, NEON, SVE): instructions per inner loop (no published anchor)."""
    if not hvx and not other:
        raise Missing("no static-proxy output (scripts/hvx_proxy.sh, scripts/isa_proxy.py; pass it with --proxy)")
    seen, uniq = set(), []
    for r in other:
        if r[:2] not in seen:
            seen.add(r[:2])
            uniq.append(r)
    panels = [p for p in (("hvx", hvx), ("other", uniq)) if p[1]]
    fig, axes = plt.subplots(1, len(panels), figsize=(8.5 * len(panels), 1.6 + 0.36 * max(len(p[1]) for p in panels)),
                             squeeze=False)
    series = {}
    for ax, (kind, rows) in zip(axes[0], panels):
        if kind == "hvx":
            labels = [r[0] for r in rows]
            hbars(ax, labels, [("packets / 128 B (STATIC COUNT)", "tab:olive", [r[1] for r in rows]),
                               ("T-MAN published vlut16 rate: cycles of the lookups alone", "0.6",
                                [r[2] * 0.5 if r[2] else None for r in rows])], "per 128 bytes of packed weights")
            ax.set_title("Hexagon HVX v67: STATIC COUNT (qemu gives no timing)")
            series["hvx packets"] = [(r[1], i) for i, r in enumerate(rows)]
        else:
            labels = [f"{r[0]} [{r[2]}]" for r in rows]
            hbars(ax, labels, [("instructions per inner loop (STATIC COUNT)", "tab:brown", [float(r[1]) for r in rows])],
                  "instructions")
            ax.set_title("Arm (SME / SVE / NEON): STATIC COUNT, no published anchor")
            series["arm instructions"] = [(r[1], i) for i, r in enumerate(rows)]
    fig.suptitle("Targets without a device here: static instruction counts from the disassembly")
    fig.tight_layout()
    return fig, series, [], "Counts of the innermost loops holding the marked instruction (scripts/isa_proxy.py)."


# ---- the page


def cpu_model(ctx):
    """The CPU: the JSON context's model where it has one, else /proc/cpuinfo's."""
    if ctx.get("cpu_model"):
        return ctx["cpu_model"]
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def git_commit():
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        c = subprocess.run(["git", "-C", here, "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                           check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", here, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True).stdout.strip()
        return c + (" (modified)" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown commit"


def stamp(fig, cpu, threads, commit, commands):
    """The label every figure carries, below its axes: CPU, threads, commit, the commands that made it."""
    thr = ", ".join(threads) if threads else "n/a (not a timing)"
    lines = [f"CPU: {cpu} | threads: {thr} | commit: {commit}"]
    width = int(fig.get_figwidth() * 17)
    for c in commands:
        lines += textwrap.wrap(c, width, subsequent_indent="    ")
    fig.text(0.0, -0.01, "\n".join(lines), fontsize=7, family="monospace", va="top", color="0.25")


def command_line(args, hide=None):
    """This script's command line, quoted; the value of option hide written as '...'."""
    shown = ["..." if hide and prev == hide else x for prev, x in zip([None] + args, args)]
    return "scripts/report.py " + " ".join(shlex.quote(x) for x in shown)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("bench", help="lutkit_bench JSON (--benchmark_out_format=json)")
    ap.add_argument("--engine", help="lutkit_llm result lines (scripts/run.sh writes build/release/engine.txt)")
    ap.add_argument("--proxy", action="append", default=[], help="scripts/hvx_proxy.sh / isa_proxy.py output")
    ap.add_argument("--out", default="build/report")
    ap.add_argument("--bench-cmd", help="the command that wrote the JSON (default: its executable)")
    ap.add_argument("--cpu", help="the CPU (default: the JSON context's, else /proc/cpuinfo)")
    ap.add_argument("--commit", help="the commit (default: git rev-parse of this checkout)")
    a = ap.parse_args()
    data = json.load(open(a.bench))
    ctx = data.get("context", {})
    cpu = a.cpu or cpu_model(ctx)
    cpu += f", {ctx['num_cpus']} CPUs" if ctx.get("num_cpus") else ""
    commit = a.commit or git_commit()
    bench_cmd = a.bench_cmd or f"{ctx.get('executable', 'lutkit_bench')} (command line not recorded)"
    report_cmd = command_line(sys.argv[1:])
    # in the figures, the data command is on its own line: not again inside the report's
    fig_cmd = command_line(sys.argv[1:], hide="--bench-cmd")
    engine = parse_engine(a.engine) if a.engine and os.path.exists(a.engine) else []
    engine_cmds = sorted({r["command"] for r in engine if r["command"]}) or \
        ([f"lutkit_llm lines in {a.engine}"] if a.engine else [])
    hvx, other = parse_proxy([p for p in a.proxy if os.path.exists(p)])
    bench_in = f"in {a.bench}"
    engine_in = f"in {a.engine}" if a.engine else "(no --engine file given)"
    proxy_in = f"in {', '.join(a.proxy)}" if a.proxy else "(no --proxy file given)"
    # name, title, figure, the commands behind its data, where its rows were looked for
    figures = [
        ("decode", "Decode roofline", lambda: fig_decode(data), [bench_cmd], bench_in),
        ("prefill", "Prefill GEMM against the measured peaks", lambda: fig_prefill(data), [bench_cmd], bench_in),
        ("attention", "Attention", lambda: fig_attention(data), [bench_cmd], bench_in),
        ("sampling", "Sampling", lambda: fig_sampling(data), [bench_cmd], bench_in),
        ("engine", "The model runner", lambda: fig_engine(engine), engine_cmds, engine_in),
        ("aie", "target::aie (modelled)", lambda: fig_aie(data), [bench_cmd], bench_in),
        ("static", "Targets without a device (static count)", lambda: fig_static(hvx, other),
         [f"static-proxy output: {', '.join(a.proxy)}"] if a.proxy else [], proxy_in),
    ]
    os.makedirs(a.out, exist_ok=True)
    manifest = {"figures": [], "omitted": []}
    body = []
    for name, title, make, cmds, source in figures:
        try:
            fig, series, threads, caption = make()
        except Missing as e:
            manifest["omitted"].append({"name": name, "missing": str(e)})
            body.append(f'<h2>{html.escape(title)}</h2>\n<p class="missing">Figure omitted: {html.escape(str(e))} '
                        f'{html.escape(source)}.</p>')
            continue
        series = {k: v for k, v in series.items() if v}
        fig.tight_layout()
        stamp(fig, cpu, threads, commit, [f"data: {c}" for c in cmds] + [f"figure: {fig_cmd}"])
        png = f"{name}.png"
        fig.savefig(os.path.join(a.out, png), dpi=100, bbox_inches="tight")
        plt.close(fig)
        manifest["figures"].append({"name": name, "png": png, "series": {k: len(v) for k, v in series.items()},
                                    "points": sum(len(v) for v in series.values()), "threads": threads,
                                    "commands": cmds})
        body.append(f'<h2>{html.escape(title)}</h2>\n<p>{html.escape(caption)}</p>\n'
                    f'<img src="{png}" alt="{html.escape(title)}">')
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        for f in (summary.main, summary.decode, summary.prefill, summary.sampling, summary.attention, summary.load,
                  summary.aie):
            f(a.bench)
    page = f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>lutkit report</title>
<style>body{{font-family:sans-serif;margin:1.5em;max-width:1900px}} img{{max-width:100%;border:1px solid #ccc}}
.missing{{color:#a40}} code{{overflow-wrap:anywhere}} pre{{font-size:11px;overflow-x:auto;background:#f6f6f6;padding:0.5em}}</style></head>
<body><h1>lutkit report</h1>
<p>CPU: {html.escape(cpu)} &middot; commit {html.escape(commit)} &middot; benchmark run
{html.escape(str(ctx.get('date', '')))}<br>benchmarks: <code>{html.escape(bench_cmd)}</code><br>
report: <code>{html.escape(report_cmd)}</code></p>
{chr(10).join(body)}
<h2>Text summary (scripts/summary.py)</h2>
<pre>{html.escape(text.getvalue())}</pre>
</body></html>
"""
    with open(os.path.join(a.out, "index.html"), "w") as f:
        f.write(page)
    with open(os.path.join(a.out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    print(f"report: {os.path.join(a.out, 'index.html')} ({len(manifest['figures'])} figures"
          + (f"; left out: {', '.join(o['name'] for o in manifest['omitted'])}" if manifest["omitted"] else "") + ")")


if __name__ == "__main__":
    main()
