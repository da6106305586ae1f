#!/usr/bin/env bash
# Call 1 of 2026-12-08 (an H200): 2026-12-07-short-exact's call3.sh, which never started, with the three test
# programs whose host helpers changed at 11ead97 (gpu_gemv, gpu_gemm_sm90, gpu_q_absorb) built and run after the first
# A/B round. Its purpose: the short-sequence tail's checks on this GPU, and the down gemv's A/B (landed at 023bbb3
# after H100 runs only). Most important first, each step only while time is left (LIMIT s, default 540):
#   1. build this tree (library, latte-bench, gpu_attention) and the base (023bbb3: library, latte-bench) side by side;
#   2. gpu_attention in full; the oracle at seed 1553349338 with both libraries;
#   3. the layer at batch 128, base and new interleaved, three rounds;
#   4. the gemv's A/B at batches 1, 2, 4, 8 (LATTE_MLA_DOWN_GEMV=0 / 1, this tree, three rounds, into gemv/);
#   5. where the short cases' misses lie, by sequence length (four seeds, every sequence, --flash);
#   6. the oracle at a fresh seed with its timing.
# Files back: summary lines on stdout; ab.tgz, gemv.tgz, gpu_attention.log, gpu_gemv.log, gpu_gemm_sm90.log, gpu_q_absorb.log, logs.tgz.
set -u
t0=$(date +%s)
LIMIT=${LIMIT:-540}
left() { [ $(( $(date +%s) - t0 )) -lt $(( LIMIT - ${1:-0} )) ]; }
S=bench/results/2026-12-07-short-exact/scripts   # lib.sh, summarize.py
. bench/results/2026-12-07-down-gemv/scripts/lib.sh   # fmt
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
mkdir -p /tmp/base && tar xzf .carry/base_src.tgz -C /tmp/base
. $S/lib.sh                                            # bld
bld /tmp/base/build /tmp/base 6 latte latte-bench & pb=$!
bld $PWD/build-gpu . 12 latte latte-bench gpu_attention gpu_gemv gpu_gemm_sm90 gpu_q_absorb || { tail -30 $OUT/build_build-gpu.log; exit 1; }
echo "new built $(( $(date +%s) - t0 )) s"
(cd build-gpu/tests && LATTE_REQUIRE_GPU=1 timeout 150 ./gpu_attention > $OUT/gpu_attention.log 2>&1; echo "gpu_attention rc $?: $(tail -1 $OUT/gpu_attention.log)")
grep -E '^FAIL|whole short sequences: P' $OUT/gpu_attention.log | cut -c1-260
wait $pb || { tail -30 $OUT/build_build.log; echo "base build failed"; }
echo "base built $(( $(date +%s) - t0 )) s"
for lib in base new; do
  L=$PWD/build-gpu/liblatte.so; [ $lib = base ] && L=/tmp/base/build/liblatte.so
  LATTE_LIBRARY=$L PYTHONPATH=$PWD/python timeout 90 python3 scripts/oracle_check.py --out $OUT/oracle_seed_$lib \
    --seed 1553349338 --no-timing > $OUT/oracle_seed_$lib.log 2>&1
  echo "oracle seed 1553349338 $lib rc $?: $(grep -E 'FAILED|all checks' $OUT/oracle_seed_$lib.log | cut -c1-300 | tr '\n' ' ')"
  grep -E '^short_lens|^few_long_random' $OUT/oracle_seed_$lib.log | sed -E 's/(y_misses=[0-9]+).*(y_miss_where=\[[^]]*\]).*(torch_absorbed_misses=[0-9]+).*/\1 \2 \3/; s/(y_misses=[0-9]+).*(torch_absorbed_misses=[0-9]+).*/\1 \2/' | cut -c1-330
done
mkdir -p $OUT/ab $OUT/gemv
ab() {
  for v in base new; do
    B=build-gpu/bench/latte-bench; [ $v = base ] && B=/tmp/base/build/bench/latte-bench
    timeout 60 $B --only mla --quick --json $OUT/ab/ab_r$1_$v.json > $OUT/ab/ab_r$1_$v.log 2>&1
    echo "round $1 $v rc $?: $(fmt $OUT/ab/ab_r$1_$v.log)"
  done
}
gemv() {
  for v in 0 1; do
    LATTE_MLA_DOWN_GEMV=$v LATTE_BENCH_LENS=512,2048,4096 timeout 60 build-gpu/bench/latte-bench --only mla --quick \
      --batch 1,2,4,8 --json $OUT/gemv/ab_r$1_gemv$v.json > $OUT/gemv/ab_r$1_gemv$v.log 2>&1
    echo "gemv round $1 LATTE_MLA_DOWN_GEMV=$v rc $?: $(fmt $OUT/gemv/ab_r$1_gemv$v.log)"
  done
}
left 60 && ab 1
left 60 && gemv 1
for t in gpu_gemv gpu_gemm_sm90 gpu_q_absorb; do left 60 && { (cd build-gpu/tests && LATTE_REQUIRE_GPU=1 timeout 60 ./$t \
  > $OUT/$t.log 2>&1; echo "$t rc $?: $(grep -c '^FAIL' $OUT/$t.log) FAIL lines; $(tail -1 $OUT/$t.log | cut -c1-200)"); }; done
left 60 && ab 2
left 60 && gemv 2
left 60 && ab 3
left 60 && gemv 3
# where the short cases' misses lie (sequence length: missing elements; scripts/oracle_check.py's y_miss_lengths), this
# library beside PyTorch absorbed and its flash-rounding variant, four seeds, every sequence of the batch
for sd in 1 2 3 4; do left 70 && { LATTE_LIBRARY=$PWD/build-gpu/liblatte.so PYTHONPATH=$PWD/python timeout 60 \
  python3 scripts/oracle_check.py --out $OUT/oracle_short_$sd --seed $sd --cases short_lens,few_long_random --sample 0 \
  --flash --no-timing > $OUT/oracle_short_$sd.log 2>&1; echo "oracle short seed $sd rc $?:"
  grep -E '^(short_lens|few_long_random)[a-z_]*:' $OUT/oracle_short_$sd.log | sed -E 's/^([a-z_]+):.*(y_misses=[0-9]+).*(torch_absorbed_misses=[0-9]+).*(torch_flash_misses=[0-9]+).*/\1 \2 \3 \4/'
  grep -oE '^[a-z_]+:|(y_miss_lengths|torch_absorbed_miss_lengths)=\{[^}]*\}' $OUT/oracle_short_$sd.log | tr '\n' ' '; echo; }; done
python3 $S/summarize.py $OUT/ab --json $OUT/ab/ab_summary.json
python3 $S/summarize.py $OUT/gemv --json $OUT/gemv/ab_summary.json
left 60 && { LATTE_LIBRARY=$PWD/build-gpu/liblatte.so PYTHONPATH=$PWD/python timeout $(( LIMIT - $(date +%s) + t0 - 10 )) \
  python3 scripts/oracle_check.py --out $OUT/oracle --iters 20 > $OUT/oracle.log 2>&1
  echo "oracle rc $?: $(grep -E 'FAILED|all checks|^len|ceilings' $OUT/oracle.log | tail -8 | tr '\n' ' ')"; }
echo "total $(( $(date +%s) - t0 )) s"
cd $OUT && tar czf ab.tgz ab && tar czf gemv.tgz gemv && tar czf logs.tgz *.log oracle_seed_* oracle_short_* oracle 2>/dev/null
rm -rf ab gemv oracle_seed_* oracle_short_* oracle build_*.log oracle*.log
ls $OUT
