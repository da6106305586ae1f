#!/usr/bin/env python3
"""Medians of the layer (µs, graph replay) per variant and case over the calls' latte-bench JSON files.

usage: summarize.py DIR... (each DIR holds one call's extracted logs.tgz; the folder name is the call, e.g. c1)
Variants: a file bench_<variant>_<group>_r<round>.json (call 0: bench_<group>_r<round>_e<experiment>.json); call 1's
'new' and calls 2-3's 'base' are the same tree (c09bfbf) for the combine path; see README.md.
"""
import collections, glob, json, os, re, statistics, sys

rows = collections.defaultdict(list)
ceil = []
for d in sys.argv[1:]:
    call = os.path.basename(d.rstrip('/'))
    for f in sorted(glob.glob(os.path.join(d, 'bench_*.json'))):
        m = re.match(r'bench_(\w+?)_(small|mid|b128)_r(\d)\.json', os.path.basename(f))
        if not m:  # call 0's names: bench_<group>_r<round>_e<experiment>.json
            m0 = re.match(r'bench_(small|mid|b128)_r(\d)_(e\d+)\.json', os.path.basename(f))
            if not m0:
                continue
            m = re.match(r'(\w+)_(\w+)_(\d)', f'{m0.group(3)}_{m0.group(1)}_{m0.group(2)}')
        j = json.load(open(f))
        ceil.append((j['ceilings']['copy_TBps'], j['ceilings']['gemm_bf16_TFLOPs']))
        for r in j['records']:
            if r.get('op') != 'mla_decode' or r['params'].get('projections') != 'tuned':
                continue
            p = r['params']
            lens = 'mixed' if 'mixed' in p['lengths'] or 'uniform' in p['lengths'] else (
                str(p['cache_len']) if p['lengths'].startswith('all equal') else p['lengths'])
            if p.get('key_convention') != 'rotated_at_read':
                lens += ' stored'
            key = (p['batch'], lens)
            rows[(call, m.group(1), key)].append((r['median_us'], r['floor_us'], r['phases_graph_us']))
out = {}
for (call, var, key), v in sorted(rows.items()):
    us = statistics.median(x[0] for x in v)
    out.setdefault(f'{call}:{var}', {})[f'b{key[0]} {key[1]}'] = {
        'layer_us_median': round(us, 1), 'layer_us_all': [x[0] for x in v], 'floor_us': round(v[0][1], 1),
        'x_floor': round(us / v[0][1], 2),
        'attention_us_median': round(statistics.median(x[2]['attention'] for x in v), 1),
        'wuv_output_us_median': round(statistics.median(x[2]['wuv_output'] for x in v), 1),
        'up_absorb_us_median': round(statistics.median(x[2]['up_absorb'] for x in v), 1)}
print(json.dumps({'ceilings_copy_TBps_gemm_TFLOPs': ceil, 'variants': out}, indent=1))
