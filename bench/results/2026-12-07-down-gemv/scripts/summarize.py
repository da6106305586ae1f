#!/usr/bin/env python3
"""Medians over the rounds of a call's layer A/B (latte-bench JSON, tuned records), per (batch, lengths) and variant,
and each variant's difference to the first. Usage: summarize.py DIR_WITH_ab_rN_V.json [--json OUT]"""
import glob, json, os, statistics as st, sys

d = sys.argv[1]
res, floors = {}, {}
for f in sorted(glob.glob(os.path.join(d, 'ab_r*_*.json'))):
    v = os.path.basename(f).rsplit('_', 1)[1].split('.')[0]
    for r in json.load(open(f))['records']:
        p = r['params']
        if p.get('projections') == 'untuned' or r.get('op') != 'mla_decode':
            continue
        key = f"b{p['batch']} " + (str(p['cache_len']) if p['lengths'].startswith('all') else 'mixed')
        res.setdefault(key, {}).setdefault(v, []).append(r['median_us'])
        floors[key] = r['floor_us']
out = {}
for key in sorted(res, key=lambda k: (int(k.split()[0][1:]), k.split()[1].rjust(6))):
    vs = sorted(res[key])
    med = {v: st.median(res[key][v]) for v in vs}
    base = vs[0]
    out[key] = {v: {'median_us': round(med[v], 1), 'all_us': res[key][v], 'x_floor': round(med[v] / floors[key], 3),
                    'diff_vs_' + base: None if v == base else round(med[v] - med[base], 1)} for v in vs}
    print(f"{key:12s} " + "  ".join(f"{v}: {med[v]:6.1f}" + ("" if v == base else f" ({med[v] - med[base]:+.1f})")
                                     for v in vs) + f"   floor {floors[key]:.1f}")
if '--json' in sys.argv:
    json.dump(out, open(sys.argv[sys.argv.index('--json') + 1], 'w'), indent=1)
