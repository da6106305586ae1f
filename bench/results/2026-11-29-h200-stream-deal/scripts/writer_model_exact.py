#!/usr/bin/env python3
# Host model (not a GPU measurement): the writer pricing equal lengths' cuts by their exact busiest CTA (writer_exact.patch)
# against the writer as it is, over batches 1-199, lengths 64-8191 (step 64), 64 and 128 heads, 132 SMs, where the static
# schedule's 2-8 splits run as one with run-time pieces. Usage: python3 writer_model_exact.py [gain, default 0.97]
import os
exec(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), 'writer_model.py')).read().split('for L in (512')[0])
def exact_choice(batch, t, grid, groups, slots, gain):
    best = None
    for k in range(1, 33):
        P = max(2, ((-(-t//k)) + 1) & ~1)
        if k > 1 and not P < t: continue
        kk = -(-t//P) if t > P else 1
        pieces = batch*kk if t > P else 0
        if pieces > slots or batch + pieces > 1024 or max(pieces, batch)*groups > 14*grid: continue
        ch = ('whole',0,0) if pieces == 0 else ('k=%d P=%d' % (k, P),0,0)
        m = index_makespan(batch, t, grid, groups, ch)
        if best is None or m < best[0]: best = (m, ch[0])
    whole = index_makespan(batch, t, grid, groups, ('whole',0,0))
    if best[1] == 'whole' or not best[0] < gain*whole: return ('whole', whole)
    return (best[1], best[0])
import sys
gain = float(sys.argv[1]) if len(sys.argv) > 1 else 0.97
worse = better = same = 0; gains=[]; worst=[]
for H in (64,128):
  g = 2 if H > 64 else 1
  for L in range(64, 8192, 64):
    for B in range(1, 200):
        n = static(B, L, heads=H); t = (L+1+63)//64
        if not (2 <= n <= 8): continue
        now = price(B, t, 132, g, n*B, False); mnow = index_makespan(B, t, 132, g, now)
        e = exact_choice(B, t, 132, g, n*B, gain)
        if e[1] > mnow: worse += 1; worst.append((e[1]/mnow, H, B, L))
        elif e[1] < mnow: better += 1; gains.append((e[1]/mnow, H, B, L))
        else: same += 1
print('gain', gain, 'worse', worse, 'better', better, 'same', same)
gains.sort(); worst.sort(reverse=True); print('best', gains[:3]); print('worst', worst[:3])
import statistics; print('median ratio where better', statistics.median(x[0] for x in gains))
