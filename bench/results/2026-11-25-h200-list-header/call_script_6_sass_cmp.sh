#!/usr/bin/env bash
# SASS of the seesaw kernel's instantiations 0 / 128 / 256 (dev build), for a diff of their pair loops
set -u
cmake -S . -B build-exp -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DCMAKE_CUDA_FLAGS=-DLATTE_DEV_EXPERIMENTS > $OUT/build_exp.log 2>&1 && cmake --build build-exp -j16 --target latte >> $OUT/build_exp.log 2>&1 || { tail -20 $OUT/build_exp.log; exit 1; }
o=$(find build-exp -name 'mla_attention_sm90_seesaw.cu.o' | head -1)
echo "object: $o"
cuobjdump -sass "$o" > $OUT/all.sass 2>&1; echo "cuobjdump rc $?"
python3 - "$OUT/all.sass" "$OUT" <<'PY'
import re, sys
txt = open(sys.argv[1]).read()
parts = re.split(r'\n\s*Function : ', txt)
want = {}
for p in parts[1:]:
    name = p.split('\n', 1)[0].strip()
    m = re.search(r'seesaw_kernelILi(\d+)E', name)
    if m and m.group(1) in ('0', '128', '256', '8', '136', '264'):
        want[m.group(1)] = p
for k, p in sorted(want.items(), key=lambda kv: int(kv[0])):
    ins = re.findall(r'/\*[0-9a-f]{4,}\*/\s+([^;]*);', p)
    open(f"{sys.argv[2]}/k{k}.sass", 'w').write('\n'.join(ins))
    ops = [i.split()[0] if not i.startswith('@') else i.split()[1] for i in ins]
    print(k, 'instructions', len(ins), 'wgmma', sum('HGMMA' in o for o in ops), 'bytes', 16 * len(ins))
PY
cd $OUT && rm -f all.sass && tar czf sass.tgz k*.sass && rm -f k*.sass
