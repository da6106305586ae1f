#!/usr/bin/env python3
"""Medians per variant and case from ab_uv.sh's printed lines (logs/*/output.txt): python3 medians.py FILE...
(also writes medians.json in the current folder)"""
import re, statistics, sys, json
out = {}
for path in sys.argv[1:]:
    runs = {}
    for line in open(path):
        m = re.match(r'uv=(\w) r\d+: (.*)', line)
        if not m: continue
        for case, us in re.findall(r'([^=]+?)=([0-9.]+)\s*', m.group(2)):
            runs.setdefault(case.strip(), {}).setdefault(m.group(1), []).append(float(us))
    out[path] = {c: {v: {"median": statistics.median(x), "n": len(x), "all": x} for v, x in vs.items()} for c, vs in runs.items()}
    print(path)
    print(f"  {'case':22} {'uv=0':>8} {'uv=1':>8} {'default':>8} {'1 - 0':>7} {'d - 0':>7}")
    for c, vs in runs.items():
        md = {v: statistics.median(x) for v, x in vs.items()}
        print(f"  {c:22} {md['0']:8.1f} {md['1']:8.1f} {md['d']:8.1f} {md['1'] - md['0']:7.1f} {md['d'] - md['0']:7.1f}")
json.dump(out, open('medians.json', 'w'), indent=1)  # every value, for summary.json
