#!/usr/bin/env python3
"""Medians per call, variant and case from the latte-bench JSONs inside logs/call*/logs.tgz: the layer's graph-replay
time, its floor (same run), and the query (up_absorb) and attention phases from the graph with event nodes. Variants:
head = 1a3997a (call 1); sN = LATTE_MLA_STREAM_DEAL=N (calls 2-3), cN = LATTE_BENCH_CAPACITY=N (call 3); new / base =
the LPT rule at 1/16 / 406c30a (calls 5-6); d16 / d32 / base = the rule at 1/16, at 1/32 (the default since), 406c30a
(call 7). Writes medians.json; prints one table per call.
Run from this folder: python3 scripts/summarize.py"""
import io, json, re, statistics, tarfile, glob

NAME = re.compile(r"bench_(?:(.+)_)?b([0-9,]+)(?:_r(\d+))?\.json$")
out = {}
for tgz in sorted(glob.glob('logs/call*/logs.tgz')):
    call = tgz.split('/')[1]
    runs = {}
    with tarfile.open(tgz) as t:
        for m in t.getmembers():
            n = NAME.search(m.name)
            if not n or not m.isfile():
                continue
            d = json.load(io.TextIOWrapper(t.extractfile(m), encoding='utf-8'))
            for r in d['records']:
                if r.get('op') != 'mla_decode' or r.get('impl') != 'latte' or r['params'].get('projections') != 'tuned':
                    continue
                p = r['params']
                lens = p['lengths'] if 'equal' not in p['lengths'] else f"len {p['cache_len']}"
                case = f"b{p['batch']} {lens}" + (" stored" if p.get('key_convention') == 'stored_rotated' else "")
                ph = r.get('phases_graph_us', {})
                runs.setdefault(case, {}).setdefault((n.group(1) or 'head'), []).append(
                    dict(us=r['median_us'], floor=r['floor_us'], up=ph.get('up_absorb'), attn=ph.get('attention')))
    if not runs:
        continue
    med = lambda xs, k: statistics.median(x[k] for x in xs)
    out[call] = {case: {v: {"layer_us_median": med(xs, 'us'), "floor_us_median": med(xs, 'floor'),
                            "up_absorb_us_median": med(xs, 'up'), "attention_us_median": med(xs, 'attn'),
                            "rounds": len(xs), "all": xs} for v, xs in vs.items()} for case, vs in runs.items()}
    variants = sorted({v for vs in runs.values() for v in vs})
    print(f"{call}: layer us (query phase | attention phase), medians of the rounds")
    print(f"  {'case':34}" + "".join(f"{v:>28}" for v in variants))
    for case in runs:
        cells = []
        for v in variants:
            r = out[call][case].get(v)
            cells.append(f"{r['layer_us_median']:7.1f} ({r['up_absorb_us_median']:4.1f} | {r['attention_us_median']:5.1f}) n{r['rounds']}" if r else "")
        print(f"  {case:34}" + "".join(f"{c:>28}" for c in cells))
json.dump(out, open('medians.json', 'w'), indent=1)
