#!/usr/bin/env python3
# Host fit (not a GPU measurement): the attention phase of equal-length layer cases (calls 0-3, H200; P = the piece
# length in tiles each writer chose, None = whole items) against the busiest CTA and the average load of index order, for
# an item's fixed cost Fw (whole) and Fp (piece) in quarter tiles. Prints the best fits. Usage: python3 fit_item_cost.py
def mk(batch,t,P,Fw,Fp,grid=132,groups=2):
    seq=[4*t+Fw] if (P is None or t<=P) else [4*min(P,t-i*P)+Fp for i in range(-(-t//P))]
    load=[0]*grid; i=0
    for b in range(batch):
        for s in seq:
            for g in range(groups): load[i%grid]+=s; i+=1
    return max(load)
W=None
data=[(48,4096,22,171.9),(48,4096,18,152.7),(72,4096,34,243.5),(72,4096,14,239.1),(72,2048,18,147.5),(72,2048,12,150),
(80,2048,18,149.6),(80,2048,12,153.3),(80,4096,34,245.1),(80,4096,22,236.9),(96,4096,34,254),(96,2048,18,156),
(100,2048,18,196),(100,2048,W,158.4),(100,4096,34,325),(100,4096,22,295),
(112,4096,W,287),(120,4096,W,293),(128,4096,W,295),(128,512,W,61.3),(128,2048,W,160),(128,6144,W,450),
(112,2048,W,156),(120,2048,W,158.5),(48,2048,W,81.8),(56,2048,W,81.8),(56,4096,W,144),(48,512,W,35),(112,512,W,59.5),(120,512,W,61)]
best=[]
for Fw in range(8,41,2):
  for Fp in range(Fw,Fw+41,2):
    xs=[mk(B,(L+1+63)//64,P,Fw,Fp) for B,L,P,y in data]; ys=[d[3] for d in data]
    n=len(xs); mx=sum(xs)/n; my=sum(ys)/n
    a=sum((x-mx)*(y-my) for x,y in zip(xs,ys))/sum((x-mx)**2 for x in xs); c=my-a*mx
    res=[y-(c+a*x) for x,y in zip(xs,ys)]
    best.append(((sum(r*r for r in res)/n)**.5,Fw,Fp,a,c,res))
best.sort()
for r in best[:8]: print('rms %.2f Fw %d Fp %d a %.3f c %.1f'%r[:5])
r=best[0]; print(' '.join('%s:%+.0f'%(f"{d[0]}/{d[1]}/{d[2]}",x) for d,x in zip(data,r[5])))
for Fw,Fp in ((12,14),(20,20),(20,28),(16,30)):
  for rr in best:
    if rr[1]==Fw and rr[2]==Fp: print('Fw %d Fp %d rms %.2f'%(Fw,Fp,rr[0]))
print('--- two-term: t = a*makespan + b*average + c')
import itertools
def avg(batch,t,P,Fw,Fp,grid=132,groups=2):
    seq=[4*t+Fw] if (P is None or t<=P) else [4*min(P,t-i*P)+Fp for i in range(-(-t//P))]
    return batch*groups*sum(seq)/grid
def lsq(X,y):
    # normal equations, 3 unknowns
    import numpy as np
    A=np.array(X); sol,res,rk,sv=np.linalg.lstsq(A,np.array(y),rcond=None); return sol, A@sol-np.array(y)
out=[]
for Fw in range(8,41,2):
  for Fp in range(Fw,Fw+41,2):
    X=[[mk(B,(L+1+63)//64,P,Fw,Fp),avg(B,(L+1+63)//64,P,Fw,Fp),1] for B,L,P,y in data]; y=[d[3] for d in data]
    sol,res=lsq(X,y); out.append(((sum(r*r for r in res)/len(res))**.5,Fw,Fp,list(sol),res))
out.sort(key=lambda r:r[0])
for r in out[:6]: print('rms %.2f Fw %d Fp %d'%r[:3], ['%.3f'%x for x in r[3]])
r=out[0]; print(' '.join('%s:%+.0f'%(f"{d[0]}/{d[1]}/{d[2]}",-x) for d,x in zip(data,r[4])))
