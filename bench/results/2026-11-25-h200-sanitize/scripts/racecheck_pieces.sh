#!/usr/bin/env bash
# call 3: the racecheck findings of call 2's sanitizer run (seesaw_piece_done's two shared-memory exchanges across a
# named barrier of all 256 threads) against the fix (the "last" bit by bar.red.or, the weights over the pieces' LSE):
# the probe's modes 4-7 (is it the tool's known false report?), the release kernel's SASS against HEAD's, and
# racecheck / memcheck / initcheck on the fixed tree's gpu_attention and gpu_mla (quick)
set -u
t0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
rm -rf /tmp/head && cp -r .carry/head /tmp/head  # HEAD's src and include (git archive, carried)
sass() {  # sass TREE OUT: the release seesaw kernel's SASS, addresses and labels normalized
  ( cd $1 && nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Isrc -Iinclude --expt-relaxed-constexpr \
      -DLATTE_HAVE_SM90A=1 -cubin -o $2.cubin src/cuda/mla_attention_sm90_seesaw.cu > /dev/null 2>&1 )
  cuobjdump -sass $2.cubin | awk '/Function : .*seesaw_kernelILi0E/{f=1; next} /Function : /{f=0} f' |
    sed -E 's/^ *\/\*[0-9a-f]+\*\/ *//; s/ *\/\*.*//; s/0x[0-9a-f]+/IMM/g; s/\.L_x_[0-9]+/L/g' | grep -v '^\s*$' > $2
}
sass /tmp/head /tmp/old.sass & sass . /tmp/new.sass &
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a > $OUT/build.log 2>&1 &&
  cmake --build build-gpu -j14 --target gpu_attention gpu_mla gpu_gemm_sm90 >> $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
nvcc -O2 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -I src bench/probes/racecheck_handoff.cu -o build-gpu/rc_probe >> $OUT/build.log 2>&1
wait
echo "built $(( $(date +%s) - t0 )) s; SASS lines old $(wc -l < /tmp/old.sass) new $(wc -l < /tmp/new.sass), differing $(diff /tmp/old.sass /tmp/new.sass | grep -c '^[<>]')"
diff /tmp/old.sass /tmp/new.sass > $OUT/sass.diff; cp /tmp/old.sass /tmp/new.sass $OUT/
S="compute-sanitizer --kernel-name-exclude kns=nvjet --kernel-name-exclude kns=cublas --kernel-name-exclude kns=xmma --kernel-name-exclude kns=cutlass"
for m in 1 4 5 6 7; do echo -n "probe mode $m: "; compute-sanitizer --tool racecheck build-gpu/rc_probe $m 2>&1 | grep -E 'ok|FAIL|SUMMARY' | tr '\n' ' '; echo; done
export LATTE_TEST_QUICK=1
( timeout 420 $S --tool racecheck build-gpu/tests/gpu_mla > $OUT/racecheck_gpu_mla.log 2>&1; echo "racecheck gpu_mla rc $? $(( $(date +%s) - t0 )) s: $(grep -E 'SUMMARY' $OUT/racecheck_gpu_mla.log) $(tail -1 $OUT/racecheck_gpu_mla.log)" ) &
( for tool in racecheck memcheck initcheck synccheck; do
    timeout 200 $S --tool $tool build-gpu/tests/gpu_attention > $OUT/${tool}_gpu_attention.log 2>&1
    echo "$tool gpu_attention rc $? $(( $(date +%s) - t0 )) s: $(grep -E 'SUMMARY' $OUT/${tool}_gpu_attention.log) $(grep -c '^  ok' $OUT/${tool}_gpu_attention.log) ok, $(grep -c FAIL $OUT/${tool}_gpu_attention.log) FAIL"
  done
  timeout 100 $S --tool racecheck build-gpu/tests/gpu_gemm_sm90 > $OUT/racecheck_gpu_gemm_sm90.log 2>&1
  echo "racecheck gpu_gemm_sm90 rc $?: $(grep SUMMARY $OUT/racecheck_gpu_gemm_sm90.log) $(tail -1 $OUT/racecheck_gpu_gemm_sm90.log)" ) &
wait
grep -h 'Race reported' $OUT/racecheck_*.log | sort | uniq -c | head -10
echo "total $(( $(date +%s) - t0 )) s"
