#!/usr/bin/env python3
"""The report's test (ctest lutkit_report): scripts/report.py on the committed inputs of this folder,
real output of one run on AMD EPYC (Zen 5), 2 vCPUs:
  bench.json     lutkit_bench --benchmark_filter=<scripts/run.sh's selection> --benchmark_min_time=0.05
                 --benchmark_out=bench.json --benchmark_out_format=json
  engine.txt     scripts/run.sh's build/release/engine.txt (lutkit_llm on the two random-weight GGUF
                 files; the machine shared with a build, so its 2-thread figures are low)
  sme_proxy.txt  the SME loops' static counts scripts/test.sh writes to build/aarch64/proxy.txt
                 (scripts/isa_proxy.py on lutkit_sme_tests, docs/targets/arm.md)
Checks: every figure is written, is a non-empty PNG the page references, and plotted data (each
series of the manifest non-empty); inputs lacking a figure's rows leave that figure out with a
line naming them, and no image; and, where chromium exists, that the browser loads every image
(a screenshot of the page is left in WORK). Without chromium that part is skipped, saying so.

  tests/report/check.py REPO_ROOT WORK_DIR
"""
import json
import os
import re
import shutil
import subprocess
import sys

FIGURES = ["decode", "prefill", "attention", "sampling", "engine", "aie", "static"]


def run_report(root, out, bench, *extra):
    cmd = [sys.executable, os.path.join(root, "scripts", "report.py"), bench, "--out", out, "--cpu", "AMD EPYC",
           "--commit", "tests/report fixture", *extra]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"FAIL: {' '.join(cmd)} exited {r.returncode}:\n{r.stdout}{r.stderr}")
    with open(os.path.join(out, "manifest.json")) as f:
        manifest = json.load(f)
    with open(os.path.join(out, "index.html")) as f:
        page = f.read()
    return manifest, page


def check_page(out, manifest, page):
    """Every image the page names exists and is a non-empty PNG; every figure is on the page and plotted data."""
    fails = []
    imgs = re.findall(r'<img src="([^"]+)"', page)
    for src in imgs:
        path = os.path.join(out, src)
        if not os.path.isfile(path) or os.path.getsize(path) < 1000:
            fails.append(f"{src}: missing or empty")
            continue
        with open(path, "rb") as f:
            if f.read(8) != b"\x89PNG\r\n\x1a\n":
                fails.append(f"{src}: not a PNG")
    for fig in manifest["figures"]:
        if fig["png"] not in imgs:
            fails.append(f"figure {fig['name']}: not on the page")
        if not fig["series"] or fig["points"] == 0:
            fails.append(f"figure {fig['name']}: no data")
        fails += [f"figure {fig['name']}: series '{k}' empty" for k, n in fig["series"].items() if n == 0]
    for o in manifest["omitted"]:
        if o["missing"] not in page.replace("&#x27;", "'"):
            fails.append(f"omitted figure {o['name']}: the page does not say which rows were missing")
        if os.path.exists(os.path.join(out, o["name"] + ".png")):
            fails.append(f"omitted figure {o['name']}: an image was written")
    return fails


def browser(out, n_images):
    """chromium loads the page: every image decoded (naturalWidth > 0); a screenshot of the page."""
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if not exe:
        print("SKIP browser check: chromium is not installed (Debian package chromium); "
              "the page's images were checked as files only")
        return []
    with open(os.path.join(out, "index.html")) as f:
        page = f.read()
    probe = ("<script>window.addEventListener('load', () => { const i = [...document.images]; "
             "document.body.setAttribute('data-loaded', i.filter(x => x.complete && x.naturalWidth > 0).length "
             "+ '/' + i.length); });</script></body>")
    with open(os.path.join(out, "probe.html"), "w") as f:
        f.write(page.replace("</body>", probe))
    flags = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--virtual-time-budget=5000"]
    url = "file://" + os.path.abspath(os.path.join(out, "probe.html"))
    try:
        dom = subprocess.run(flags + ["--dump-dom", url], capture_output=True, text=True, timeout=60).stdout
        shot = os.path.abspath(os.path.join(out, "screenshot.png"))
        subprocess.run(flags + [f"--screenshot={shot}", "--window-size=1400,2400", url], capture_output=True,
                       timeout=60)
    except subprocess.TimeoutExpired:
        return ["chromium timed out"]
    m = re.search(r'data-loaded="(\d+)/(\d+)"', dom)
    fails = []
    if not m:
        fails.append("chromium: the page's load probe did not run")
    elif m.group(1) != m.group(2) or int(m.group(2)) != n_images:
        fails.append(f"chromium: {m.group(1)} of {m.group(2)} images loaded ({n_images} expected)")
    if not os.path.isfile(shot) or os.path.getsize(shot) < 10000:
        fails.append("chromium: no screenshot")
    if not fails:
        print(f"browser: chromium loaded {m.group(1)}/{m.group(2)} images; screenshot {shot}")
    return fails


def main(root, work):
    here = os.path.dirname(os.path.abspath(__file__))
    full = os.path.join(work, "full")
    manifest, page = run_report(root, full, os.path.join(here, "bench.json"),
                                "--engine", os.path.join(here, "engine.txt"),
                                "--proxy", os.path.join(here, "sme_proxy.txt"),
                                "--bench-cmd", "lutkit_bench --benchmark_filter=<scripts/run.sh's> "
                                "--benchmark_min_time=0.05 --benchmark_out_format=json")
    fails = check_page(full, manifest, page)
    got = [f["name"] for f in manifest["figures"]]
    fails += [f"figure {f['name']}: no command recorded" for f in manifest["figures"] if not f["commands"]]
    with open(os.path.join(here, "engine.txt")) as f:
        runs = sorted(line[2:].strip() for line in f if line.startswith("$ "))
    eng = next((f for f in manifest["figures"] if f["name"] == "engine"), None)
    if eng and sorted(eng["commands"]) != runs:
        fails.append(f"figure engine: commands {eng['commands']}, expected the {len(runs)} of engine.txt")
    fails += [f"figure {n}: missing from the full inputs' report" for n in FIGURES if n not in got]
    print(f"full inputs: {len(got)} figures, " + ", ".join(f"{f['name']} {f['points']} points" for f in manifest["figures"]))

    # only the aie/ rows, no engine, no proxy: every other figure left out, saying which rows it lacked
    with open(os.path.join(here, "bench.json")) as f:
        data = json.load(f)
    data["benchmarks"] = [b for b in data["benchmarks"] if b["name"].startswith("aie/")]
    part = os.path.join(work, "partial")
    os.makedirs(part, exist_ok=True)
    with open(os.path.join(part, "aie_only.json"), "w") as f:
        json.dump(data, f)
    pm, pp = run_report(root, part, os.path.join(part, "aie_only.json"))
    fails += check_page(part, pm, pp)
    if [f["name"] for f in pm["figures"]] != ["aie"]:
        fails.append(f"aie rows only: figures {[f['name'] for f in pm['figures']]}, expected ['aie']")
    if sorted(o["name"] for o in pm["omitted"]) != sorted(n for n in FIGURES if n != "aie"):
        fails.append(f"aie rows only: omitted {[o['name'] for o in pm['omitted']]}")
    print(f"aie rows only: {len(pm['omitted'])} figures left out, each with its line")

    fails += browser(full, len(manifest["figures"]))
    for x in fails:
        print("FAIL:", x)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
