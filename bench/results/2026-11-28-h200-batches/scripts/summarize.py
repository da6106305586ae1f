#!/usr/bin/env python3
"""Medians per call, variant and case from the latte-bench logs inside logs/call*/logs.tgz (the layer's graph-replay
time and its attention phase from the graph with event nodes). Writes medians.json; prints one table per call.
Run from this folder: python3 scripts/summarize.py"""
import io, json, re, statistics, tarfile, glob, os

LINE = re.compile(r'^mla (.+?): ([0-9.]+) us .*\| graph: .*?attention ([0-9.]+)')
NAME = re.compile(r'bench_(.+?)_r(\d+)\.log$')
out = {}
for tgz in sorted(glob.glob('logs/call*/logs.tgz')):
    call = tgz.split('/')[1]
    runs = {}
    with tarfile.open(tgz) as t:
        for m in t.getmembers():
            n = NAME.search(m.name)
            if not n or not m.isfile():
                continue
            variant = re.sub(r'_b[0-9,]+$', '', n.group(1))  # call 5 names its batch lists
            for line in io.TextIOWrapper(t.extractfile(m), encoding='utf-8', errors='replace'):
                g = LINE.match(line)
                if g and 'untuned' not in g.group(1):
                    runs.setdefault(g.group(1), {}).setdefault(variant, []).append((float(g.group(2)), float(g.group(3))))
    if not runs:
        continue
    out[call] = {case: {v: {"layer_us_median": statistics.median(x[0] for x in xs),
                            "attention_us_median": statistics.median(x[1] for x in xs),
                            "rounds": len(xs), "all": xs} for v, xs in vs.items()} for case, vs in runs.items()}
    variants = sorted({v for vs in runs.values() for v in vs})
    print(f"{call}: layer us (attention phase us), medians of the rounds")
    print(f"  {'case':28}" + "".join(f"{v:>22}" for v in variants))
    for case, vs in runs.items():
        cells = []
        for v in variants:
            r = out[call][case].get(v)
            cells.append(f"{r['layer_us_median']:9.1f} ({r['attention_us_median']:5.1f}) n{r['rounds']}" if r else " " * 22)
        print(f"  {case:28}" + "".join(f"{c:>22}" for c in cells))
json.dump(out, open('medians.json', 'w'), indent=1)
