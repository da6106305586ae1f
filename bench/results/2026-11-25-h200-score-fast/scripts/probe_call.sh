#!/bin/bash
# build the pair-order probe, run it, and count the SASS opcodes of its seesaw variants
set -e
nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -DLATTE_HAVE_SM90A=1 -Isrc bench/probes/pair_order.cu -o /tmp/pair_order
/tmp/pair_order 96 | tee $OUT/pair_order.log
cuobjdump -sass /tmp/pair_order > /tmp/po.sass
python3 - <<'PY' | tee $OUT/sass_hist.log
import re, collections
fn = None; hist = collections.defaultdict(collections.Counter)
for line in open('/tmp/po.sass'):
    m = re.search(r'Function : (\S+)', line)
    if m: fn = m.group(1); continue
    m = re.match(r'\s+/\*[0-9a-f]{4}\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)', line)
    if m and fn: hist[fn][m.group(2).split('.')[0]] += 1
keys = sorted(hist)
for k in keys:
    if 'pair_probe' not in k: continue
    h = hist[k]
    print(k, 'total', sum(h.values()))
    print('   ', ', '.join('%s %d' % kv for kv in h.most_common(40)))
PY
