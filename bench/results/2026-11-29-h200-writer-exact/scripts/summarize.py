#!/usr/bin/env python3
"""Medians per call, variant and case from the latte-bench JSONs in logs/call*.tgz: the layer's graph-replay time, its
floor (same run), and the query (up_absorb) and attention phases from the graph with event nodes; the ceilings each run
measured. Variants: new = the writer pricing equal lengths exactly (call 0: as the prepared patch, with the general
bound for unequal lengths; call 1: without it, as committed), base = 20b12a2, dev kN = a dev build with
LATTE_MLA_FORCE_PIECES=N (k0: the writer's own choice). Writes medians.json; prints one table per call.
Run from this folder: python3 scripts/summarize.py"""
import io, json, re, statistics, tarfile, glob

NAME = re.compile(r"bench_(new|base|dev)_(.+)\.json$")
out = {"ceilings": {}}
for tgz in sorted(glob.glob('logs/call*.tgz')):
    call = tgz.split('/')[1][:-4]
    runs = {}
    with tarfile.open(tgz) as t:
        for m in t.getmembers():
            n = NAME.search(m.name)
            if not n or not m.isfile():
                continue
            d = json.load(io.TextIOWrapper(t.extractfile(m), encoding='utf-8'))
            out["ceilings"].setdefault(call, []).append(d['ceilings'])
            variant = n.group(1) + ((' ' + n.group(2).split('_')[-1]) if n.group(1) == 'dev' else '')
            for r in d['records']:
                if r.get('op') != 'mla_decode' or r.get('impl') != 'latte' or r['params'].get('projections') != 'tuned':
                    continue
                p = r['params']
                lens = p['lengths'] if 'equal' not in p['lengths'] else f"len {p['cache_len']}"
                case = f"b{p['batch']} {lens}" + (" stored" if p.get('key_convention') == 'stored_rotated' else "")
                ph = r.get('phases_graph_us', {})
                runs.setdefault(case, {}).setdefault(variant, []).append(
                    dict(us=r['median_us'], floor=r['floor_us'], up=ph.get('up_absorb'), attn=ph.get('attention')))
    if not runs:
        continue
    med = lambda xs, k: statistics.median(x[k] for x in xs)
    out[call] = {case: {v: {"layer_us_median": med(xs, 'us'), "floor_us_median": med(xs, 'floor'),
                            "up_absorb_us_median": med(xs, 'up'), "attention_us_median": med(xs, 'attn'),
                            "rounds": len(xs), "all": xs} for v, xs in vs.items()} for case, vs in runs.items()}
    variants = sorted({v for vs in runs.values() for v in vs}, key=lambda v: (v[:3], int(v[5:]) if v[5:].isdigit() else 0))
    print(f"{call}: layer us (query phase | attention phase), medians of the rounds")
    print(f"  {'case':24}" + "".join(f"{v:>26}" for v in variants))
    for case in runs:
        cells = []
        for v in variants:
            r = out[call][case].get(v)
            cells.append(f"{r['layer_us_median']:6.1f} ({r['up_absorb_us_median']:4.1f}|{r['attention_us_median']:5.1f}) n{r['rounds']}" if r else "")
        print(f"  {case:24}" + "".join(f"{c:>26}" for c in cells))
json.dump(out, open('medians.json', 'w'), indent=1)
