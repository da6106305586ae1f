#!/usr/bin/env python3
"""Medians of the A/B rounds of a call (ab_r<round>_<variant>.log, latte-bench --only mla --quick): the layer in graph
replay and its graph phases per case and variant, the ceilings of each round, and the device. Usage:
summarize.py CALL_DIR [--prefix P] [--json OUT]"""
import glob, json, os, re, statistics, sys

def parse(path):
    text = open(path).read()
    dev = re.search(r'^latte-bench: (.*?), \d+ SMs', text, re.M).group(1)
    ceil = re.search(r'ceilings: copy ([\d.]+) TB/s .*GEMM ([\d.]+) TFLOP/s', text)
    cases = {}
    for m in re.finditer(r'^mla ((?:b\d+ )?(?:len|lens) [^:]*): ([\d.]+) us \(floor ([\d.]+), x([\d.]+)\).*\| graph: (.*)$', text, re.M):
        if 'untuned' in m.group(1):
            continue
        phases = {k: float(v) for k, v in re.findall(r'(\w+) ([\d.]+)', m.group(5))}
        cases[m.group(1)] = {"us": float(m.group(2)), "floor_us": float(m.group(3)), "ratio_to_floor": float(m.group(4)),
                             "phases_graph_us": phases}
    return dev, {"copy_TBps": float(ceil.group(1)), "gemm_bf16_TFLOPs": float(ceil.group(2))}, cases

def main():
    d = sys.argv[1]
    out = sys.argv[sys.argv.index('--json') + 1] if '--json' in sys.argv else None
    # --prefix P: only the variants named P... (e.g. gemv0 / gemv1 of one A/B), compared as the first against the last
    prefix = sys.argv[sys.argv.index('--prefix') + 1] if '--prefix' in sys.argv else ''
    runs = {}
    device = None
    for p in sorted(glob.glob(os.path.join(d, 'ab_r*_*.log'))):
        rnd, var = re.match(r'ab_r(\d+)_(\w+)\.log', os.path.basename(p)).groups()
        if prefix and not var.startswith(prefix):
            continue
        device, ceil, cases = parse(p)
        runs.setdefault(var, []).append({"round": int(rnd), "ceilings": ceil, "cases": cases})
    variants = sorted(runs)
    names = list(runs[variants[0]][0]["cases"])
    summary = {"device": device, "method": "latte-bench --only mla --quick, graph replay medians per round; rounds "
               "interleaved (base then new); the median over the rounds", "variants": {}}
    print(f"device: {device}")
    a, b = ('base', 'new') if 'base' in variants else (variants[0], variants[-1])
    print(f"{'case':28s}" + "".join(f"{v:>28s}" for v in variants) + f"   {b} - {a}")
    for n in names:
        row, med = f"{n:28s}", {}
        for v in variants:
            vals = [r["cases"][n]["us"] for r in runs[v] if n in r["cases"]]
            att = [r["cases"][n]["phases_graph_us"].get("attention") for r in runs[v] if n in r["cases"]]
            med[v] = statistics.median(vals)
            row += f"{med[v]:9.1f} ({'/'.join(f'{x:.1f}' for x in vals)})".rjust(28)
            summary["variants"].setdefault(v, {})[n] = {"median_us": med[v], "rounds_us": vals,
                                                       "attention_phase_graph_us": att,
                                                       "floor_us": runs[v][0]["cases"][n]["floor_us"]}
        if a != b:
            row += f"   {med[b] - med[a]:+.1f}"
        print(row)
    summary["ceilings_per_round"] = {v: [r["ceilings"] for r in runs[v]] for v in variants}
    if out:
        json.dump(summary, open(out, 'w'), indent=1)

main()
