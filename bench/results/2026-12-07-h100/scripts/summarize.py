#!/usr/bin/env python3
"""summary.json from logs/*.tgz and gpu_check/bench.json: layer medians (graph replay) per call, variant and case."""
import collections, json, os, re, statistics as st, tarfile
here = os.path.dirname(os.path.abspath(__file__)) + '/..'
def key(r):
    p = r['params']
    lens = str(p.get('lengths', ''))
    kind = 'mixed' if 'uniform' in lens else 'skewed' if 'sequences a' in lens else str(p.get('cache_len'))
    conv = ' stored-rotated' if p.get('key_convention') == 'stored_rotated' else ''
    return f"b{p['batch']} {kind}{conv}"
def layer(recs):
    for r in recs:
        if r.get('op') == 'mla_decode' and r.get('impl') == 'latte' and r['params'].get('tuned') is not False:
            yield key(r), r['median_us'], r.get('floor_us')
out = {'device': 'NVIDIA H100 80GB HBM3 (132 SMs, 50 MB L2), one GPU per call', 'date': '2026-12-07',
       'commits': {'call 1': '8c08834', 'calls 2-3': '8c08834 + dev/wo_prefetch.patch (not kept)'},
       'method': 'latte-bench (CUDA-graph replay medians), variants interleaved in one call; medians over rounds',
       'calls': {}, 'ceilings_by_run': {}}
d = json.load(open(f'{here}/gpu_check/bench.json'))
out['ceilings_by_run']['call1 gpu_check'] = d['ceilings']
out['calls']['1 gpu_check'] = {k: {'median_us': round(v, 1), 'floor_us': round(f, 1), 'x_floor': round(v / f, 3)}
                               for k, v, f in layer(d['records'])}
for call, tgz, pat in ((1, 'call1_serving.tgz', r'serving_r(\d)_(.+)\.json'), (2, 'call2.tgz', r'ab_r(\d)_(.+)\.json'),
                       (3, 'call3.tgz', r'ab_r(\d)_(.+)\.json')):
    if not os.path.exists(f'{here}/logs/{tgz}'):
        continue
    acc = collections.defaultdict(lambda: collections.defaultdict(list))
    floors = {}
    t = tarfile.open(f'{here}/logs/{tgz}')
    for m in t.getmembers():
        mm = re.fullmatch(pat, os.path.basename(m.name))
        if not mm:
            continue
        dd = json.load(t.extractfile(m))
        out['ceilings_by_run'][f'call{call} round {mm.group(1)} {mm.group(2)}'] = dd.get('ceilings')
        for k, v, f in layer(dd['records']):
            acc[mm.group(2)][k].append(v)
            floors[k] = f
    label = {1: 'LATTE_MLA_UV_COMBINE', 2: 'LATTE_MLA_WO_PREFETCH_KB', 3: 'LATTE_MLA_WO_PREFETCH_KB'}[call]
    base = '1' if call == 1 else '0'
    out['calls'][str(call)] = {f'{label}={v}': {k: {
        'median_us': round(st.median(x), 1), 'all_us': [round(y, 1) for y in x], 'floor_us': round(floors[k], 1),
        'x_floor': round(st.median(x) / floors[k], 3),
        'diff_vs_' + base: (round(st.median(x) - st.median(acc[base][k]), 1) if v != base and acc[base].get(k) else None)}
        for k, x in sorted(acc[v].items())} for v in sorted(acc)}
json.dump(out, open(f'{here}/summary.json', 'w'), indent=1)
print('wrote summary.json:', ', '.join(out['calls']))
