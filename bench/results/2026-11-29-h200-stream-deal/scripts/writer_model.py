#!/usr/bin/env python3
# A host model (written 2026-11-29, after the device time was spent; not a GPU measurement) of latte's attention
# schedule for EQUAL lengths on 132 SMs, 128 heads: the static schedule (mla_attention_schedule, mla_attention.cu) and,
# where it gives 2..8 splits (MlaAttentionParams::runtime_split), the list writer's piece pricing (mla_schedule_split,
# mla_attention_schedule.cuh) as it is, and with the general bound ceil(items / grid) * smallest added. For each, the
# busiest CTA of the list the writer then deals (equal lengths: index order), against whole items'. Quarter tiles
# (a 64-token tile = 4; an item's fixed cost F = 12, a piece's combine CQ = 2), gain 0.85. Usage: python3 writer_model.py
import math
F, CQ, GAIN = 12, 2, 0.85
def static(batch, L, sms=132, heads=128):
    tiles = (L + 1 + 63)//64; groups = 2 if heads > 64 else 1; blocks = batch*groups
    best = None
    for n in range(1, tiles+1):
        per = -(-tiles//n); splits = -(-tiles//per)
        if splits != n: continue
        waves = -(-blocks*n//sms); cost = waves*(1.0+per)
        if n > 1: cost += 0.5 + 2.0*n*batch*heads*512*4/(sms*160.0*1024)
        if best is None or cost < best[0]: best = (cost, n, per)
    return best[1]
def size(t, piece): return 4*t + F + (CQ if piece else 0) if t > 0 else 0
def price(batch, t, grid, groups, slots, general):
    res = []
    for k in range(1, 33):
        P = max(2, ((-(-t//k)) + 1) & ~1)
        big_tiles = max(1, P-1)
        if t > P:
            kk = -(-t//P); pieces = batch*kk; units = pieces; real = pieces
            cost = batch*(4*t + kk*(F+CQ)); last = t - (kk-1)*P
            big = batch*((kk-1) + (last >= big_tiles)); smallest = size(last, True)
        else:
            pieces = 0; units = batch; real = batch; cost = batch*size(t, False)
            big = batch*(t >= big_tiles); smallest = size(t, False)
        ok = (k == 1 or P < t) and pieces <= slots and batch + pieces <= 1024 and units*groups <= 14*grid
        largest = size(min(P, t), pieces > 0)
        e = max(largest, cost*groups/grid)
        if real*groups > grid: e = max(e, 2*smallest)
        if big*groups > grid: e = max(e, 2*size(big_tiles, False))
        if general: e = max(e, -(-real*groups//grid)*smallest)
        res.append((e if ok else float('inf'), k, P, pieces, real*groups))
    e_whole = res[0][0]
    best = min(res)
    if best[1] == 1 or not (best[0] < GAIN*e_whole): return ('whole', e_whole, batch*groups)
    return ('k=%d P=%d' % (best[1], best[2]), best[0], best[4])
def index_makespan(batch, t, grid, groups, choice):
    # equal lengths: pieces in index order; whole: index order
    if choice[0] == 'whole':
        items = [size(t, False)]*(batch*groups)
    else:
        P = int(choice[0].split('P=')[1]); kk = -(-t//P)
        seq = [size(min(P, t - i*P), True) for i in range(kk)]
        items = []
        for b in range(batch):
            for s in seq: items += [s]*groups
    load = [0]*grid
    for i, s in enumerate(items): load[i % grid] += s
    return max(load)
for L in (512, 1024, 2048, 4096, 6144):
    for B in (8, 16, 24, 32, 40, 48, 56, 64, 72, 80, 96, 100, 112, 120, 128):
        n = static(B, L); t = (L+1+63)//64
        if not (2 <= n <= 8): continue
        slots = n*B
        old = price(B, t, 132, 2, slots, False); new = price(B, t, 132, 2, slots, True)
        mo, mn = index_makespan(B, t, 132, 2, old), index_makespan(B, t, 132, 2, new)
        flag = '  <-- changes' if old[0] != new[0] else ''
        print(f"L {L:5} B {B:3}: static {n} splits; writer now {old[0]:11} (est {old[1]:6.1f}, {old[2]:4} items, makespan {mo:4}) | with bound {new[0]:11} (est {new[1]:6.1f}, makespan {mn:4}){flag}")
