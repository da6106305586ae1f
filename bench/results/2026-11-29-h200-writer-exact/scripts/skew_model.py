#!/usr/bin/env python3
# Host model (not a GPU measurement): the writer's estimate for unequal lengths at batch 128 with 4 x 8191 and 124 x 511
# tokens (132 CTAs, 2 head groups), without and with the general bound ceil(items / CTAs) x smallest, each cut's LPT
# busiest CTA beside it. Usage: python3 skew_model.py [item fixed cost in quarter tiles, default 12]
import sys
F,CQ=int(sys.argv[1]) if len(sys.argv) > 1 else 12,2
def size(t,p): return 4*t+F+(CQ if p else 0) if t>0 else 0
def price(lens_t, grid, groups, slots, general):
    longest=max(lens_t); res=[]
    for k in range(1,33):
        P=max(2,((-(-longest//k))+1)&~1); bt=max(1,P-1)
        units=pieces=cost=real=big=0; smallest=10**9
        for t in lens_t:
            if t>P:
                kk=-(-t//P); pieces+=kk; units+=kk; real+=kk; cost+=4*t+kk*(F+CQ); last=t-(kk-1)*P
                big+=kk-1+(last>=bt); smallest=min(smallest,size(last,True))
            else:
                units+=1; real+=1; cost+=size(t,False); big+=t>=bt; smallest=min(smallest,size(t,False))
        ok=(k==1 or P<longest) and pieces<=slots and units*groups<=14*grid
        e=max(size(min(P,longest),pieces>0), cost*groups/grid)
        if real*groups>grid: e=max(e,2*smallest)
        if big*groups>grid: e=max(e,2*size(bt,False))
        if general: e=max(e,-(-real*groups//grid)*smallest)
        res.append((e if ok else 1e9,k,P))
    return res
def lpt(lens_t,P,grid,groups):
    items=[]
    for t in lens_t:
        if P and t>P:
            kk=-(-t//P)
            for i in range(kk): items+=[size(min(P,t-i*P),True)]*groups
        else: items+=[size(t,False)]*groups
    items.sort(reverse=True); import heapq
    h=[0]*grid
    for s in items: x=heapq.heappop(h); heapq.heappush(h,x+s)
    return max(h), len(items)
lens=[128]*4+[8]*124
for g in (132,):
  for gen in (False,True):
    r=price(lens,g,2,128,gen); b=min(r)
    print(gen,'best',b,'whole',r[0][0])
    for e,k,P in r[:20]: print('  k',k,'P',P,'e',round(e,1),'lpt',lpt(lens,P,g,2))
