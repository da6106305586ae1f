#!/usr/bin/env bash
# the seesaw kernel's SASS, HEAD's file against the working tree's (same flags): which instructions differ, and where
set -u
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a > /dev/null 2>&1
F="-O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Isrc -Iinclude -Ibuild-gpu/include --expt-relaxed-constexpr -DLATTE_HAVE_SM90A=1 -cubin"
cp .carry/base_tail/src/cuda/mla_attention_sm90_seesaw.cu src/cuda/zz_old_seesaw.cu
nvcc $F -o /tmp/old.cubin src/cuda/zz_old_seesaw.cu 2>/dev/null; nvcc $F -o /tmp/new.cubin src/cuda/mla_attention_sm90_seesaw.cu 2>/dev/null
rm -f src/cuda/zz_old_seesaw.cu
for v in old new; do cuobjdump -sass /tmp/$v.cubin | grep -E '^\s+/\*[0-9a-f]{4,5}\*/' | sed -E 's#^\s+/\*[0-9a-f]+\*/\s+##; s#\s*;.*##; s#\s+# #g' > $OUT/$v.sass; wc -l < $OUT/$v.sass; done
diff $OUT/old.sass $OUT/new.sass > $OUT/sass.diff; echo "diff lines: $(grep -c '^[<>]' $OUT/sass.diff)"; grep -E '^[0-9]' $OUT/sass.diff | head -40
for v in old new; do awk "{ if (\$1 ~ /^@/) print \$2; else print \$1}" $OUT/$v.sass | sort | uniq -c > $OUT/$v.hist; done; diff $OUT/old.hist $OUT/new.hist | grep "^[<>]" | tr "\n" " "; echo
