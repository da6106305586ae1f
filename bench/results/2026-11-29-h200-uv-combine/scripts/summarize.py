#!/usr/bin/env python3
"""summary.json from logs/call*.tgz: layer medians (graph replay) per variant, batch and length; ceilings per run."""
import collections, io, json, re, statistics as st, tarfile, os
here = os.path.dirname(os.path.abspath(__file__)) + '/..'
def runs(call):
    """(variant, round, records, ceilings) of one call's bench JSONs"""
    t = tarfile.open(f'{here}/logs/call{call}.tgz')
    for m in t.getmembers():
        name = os.path.basename(m.name)
        if not (name.startswith('bench_') and name.endswith('.json')):
            continue
        d = json.load(t.extractfile(m))
        tag = name[len('bench_'):-len('.json')]
        yield tag, d['records'], d.get('ceilings', {})
def key(r):
    p = r['params']
    lens = str(p.get('lengths', ''))
    return f"b{p['batch']} " + ('mixed' if 'uniform' in lens else 'skewed' if 'x8191' in lens else str(p.get('cache_len')))
out = {'device': 'NVIDIA H200 (132 SMs), one GPU per call', 'date': '2026-11-29',
       'commits': {'base': '7296ac3', 'kernel': '8ff5bbe (fused path at batches <= 32)',
                   'final': '3cc75ae (fused path at batches <= 16)',
                   'refactor': '009a48a (smem opt-in helper; call 8: every GPU test passes)'},
       'method': 'latte-bench --only mla --quick (CUDA-graph replay medians), variants interleaved in one call; '
                 'medians over rounds below; each run measured its own ceilings (ceilings_by_run)',
       'calls': {}, 'ceilings_by_run': {}}
variants = {1: lambda t: t.split('_')[0], 2: lambda t: t.rsplit('_', 1)[0], 3: lambda t: t.rsplit('_', 1)[0],
            4: lambda t: t.split('_')[0], 6: lambda t: t.split('_')[0], 7: lambda t: 'on' if t == '1' else 'off'}
ab = collections.defaultdict(lambda: collections.defaultdict(list))
for call, vf in variants.items():
    acc = collections.defaultdict(lambda: collections.defaultdict(list))
    floors = {}
    for tag, recs, ceil in runs(call):
        out['ceilings_by_run'][f'call{call} {tag}'] = ceil
        v = vf(tag)
        for r in recs:
            if r.get('op') != 'mla_decode' or r.get('impl') != 'latte':
                continue
            if r['params'].get('tuned') is False:
                continue
            k = key(r)
            acc[v][k].append(r['median_us'])
            floors[k] = r.get('floor_us')
            if call in (4, 6) and v in ('on', 'off'):
                ab[k][v].append(r['median_us'])
    out['calls'][str(call)] = {v: {k: {'median_us': round(st.median(x), 1), 'all_us': [round(y, 1) for y in x],
                                       'floor_us': round(floors[k], 1) if floors.get(k) else None}
                                   for k, x in sorted(acc[v].items())} for v in sorted(acc)}
out['ab_calls_4_and_6'] = {k: {'on_us': round(st.median(v['on']), 1), 'off_us': round(st.median(v['off']), 1),
                               'diff_us': round(st.median(v['on']) - st.median(v['off']), 1), 'rounds': len(v['on'])}
                           for k, v in sorted(ab.items()) if v['on'] and v['off']}
json.dump(out, open(f'{here}/summary.json', 'w'), indent=1)
for k, v in out['ab_calls_4_and_6'].items():
    print(k, v)
