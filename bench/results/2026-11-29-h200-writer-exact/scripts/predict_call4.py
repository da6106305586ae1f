#!/usr/bin/env python3
# Host model (not a GPU measurement): the exact pricing of equal lengths with fixed cost 12 / 14 (the first commit)
# against other fixed costs, judged by the two-term fit (fit_item_cost.py), over batches 33-127 and lengths 512-8191
# where the static schedule splits 2-8 ways; then call 4's predictions. Usage: python3 predict_call4.py
import os
D = os.path.dirname(os.path.abspath(__file__))
exec(open(os.path.join(D, '../../2026-11-29-h200-stream-deal/scripts/writer_model.py')).read().split('for L in (512')[0])
exec(open(os.path.join(D, 'fit_item_cost.py')).read().split('W=None')[0])
def avg(batch,t,P,Fw,Fp,grid=132,groups=2):
    seq=[4*t+Fw] if (P is None or t<=P) else [4*min(P,t-i*P)+Fp for i in range(-(-t//P))]
    return batch*groups*sum(seq)/grid
A,Bc,C,FW,FP=0.402,0.139,6.2,14,22
def T(B,t,P): return A*mk(B,t,P,FW,FP)+Bc*avg(B,t,P,FW,FP)+C
def cands(B,t,slots,grid=132,groups=2):
    out=[]
    for k in range(1,33):
        P=max(2,((-(-t//k))+1)&~1)
        if k>1 and not P<t: continue
        kk=-(-t//P) if t>P else 1; pieces=B*kk if t>P else 0
        if pieces>slots or B+pieces>1024 or max(pieces,B)*groups>14*grid: continue
        out.append(P if pieces else None)
    return out
def choose_cur(B,t,slots):
    best=None
    for P in cands(B,t,slots):
        m=mk(B,t,P,12,14)
        if best is None or m<best[0]: best=(m,P)
    whole=mk(B,t,None,12,14)
    return None if best[1] is None or not best[0]<0.97*whole else best[1]
def choose_new(B,t,slots,r,fw,fp,gain):
    best=None
    for P in cands(B,t,slots):
        m=mk(B,t,P,fw,fp)+r*avg(B,t,P,fw,fp)
        if best is None or m<best[0]: best=(m,P)
    whole=mk(B,t,None,fw,fp)+r*avg(B,t,None,fw,fp)
    return None if best[1] is None or not best[0]<gain*whole else best[1]
import statistics
for r,fw,fp,gain in ((0,12,14,0.97),(0.35,14,22,0.97),(0.35,14,22,1.0),(0.35,12,20,0.97),(0,20,22,0.97)):
    tot=[];worse=0;rows=[]
    for L in range(512,8192,256):
        for Bt in range(33,128):
            n=static(Bt,L); t=(L+1+63)//64
            if not (2<=n<=8): continue
            pc=choose_cur(Bt,t,n*Bt); pn=choose_new(Bt,t,n*Bt,r,fw,fp,gain)
            tc,tn=T(Bt,t,pc),T(Bt,t,pn); tot.append(tn/tc)
            if tn>tc*1.005: worse+=1
            rows.append((tn/tc,Bt,L,pc,pn,round(tc,1),round(tn,1)))
    rows.sort()
    print(r,fw,fp,gain,'shapes',len(tot),'mean ratio %.4f'%(sum(tot)/len(tot)),'worse>0.5%',worse,'best',rows[:3])
print('--- shapes')
for Bt,L in ((72,1024),(79,1536),(72,2048),(80,2048),(96,2048),(48,4096),(72,4096),(80,4096),(100,4096),(48,6144),(72,6144),(100,6144),(40,4096),(40,1024)):
    n=static(Bt,L); t=(L+1+63)//64
    if not (2<=n<=8): print(Bt,L,'static',n); continue
    pc=choose_cur(Bt,t,n*Bt); pn=choose_new(Bt,t,n*Bt,0,20,22,0.97)
    print(Bt,L,'cur P',pc,'new P',pn,'model µs %.1f -> %.1f'%(T(Bt,t,pc),T(Bt,t,pn)))
print('--- call4 predictions')
for Bt in (40,48,72,79,100):
  row=[]
  for L in (1024,1536,2048,4096,6144):
    n=static(Bt,L); t=(L+1+63)//64
    if not (2<=n<=8): row.append('%d: static %d'%(L,n)); continue
    pc=choose_cur(Bt,t,n*Bt); pn=choose_new(Bt,t,n*Bt,0,20,22,0.97)
    row.append('%d: P %s->%s %.0f->%.0f'%(L,pc,pn,T(Bt,t,pc),T(Bt,t,pn)))
  print(Bt,' | '.join(row))
