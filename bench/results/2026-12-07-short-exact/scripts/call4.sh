#!/usr/bin/env bash
# Call 4 (an H100, the session's last device time; the H200 of call 3 never came): where the short cases' misses lie,
# by sequence length (scripts/oracle_check.py's y_miss_lengths), this tree's library beside PyTorch absorbed and its
# flash-rounding variant; four seeds, every sequence of the batch. LIMIT s (default 200).
set -u
t0=$(date +%s)
LIMIT=${LIMIT:-200}
left() { [ $(( $(date +%s) - t0 )) -lt $(( LIMIT - ${1:-0} )) ]; }
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a > $OUT/build.log 2>&1 &&
  cmake --build build-gpu -j16 --target latte >> $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
echo "built $(( $(date +%s) - t0 )) s"
for sd in 1 2 3 4; do left 35 && { LATTE_LIBRARY=$PWD/build-gpu/liblatte.so PYTHONPATH=$PWD/python timeout 45 \
  python3 scripts/oracle_check.py --out $OUT/oracle_short_$sd --seed $sd --cases short_lens,few_long_random --sample 0 \
  --flash --no-timing > $OUT/oracle_short_$sd.log 2>&1; echo "oracle short seed $sd rc $? at $(( $(date +%s) - t0 )) s:"
  grep -E '^(short_lens|few_long_random)[a-z_]*:' $OUT/oracle_short_$sd.log | sed -E 's/^([a-z_]+):.*(y_misses=[0-9]+).*(torch_absorbed_misses=[0-9]+).*(torch_flash_misses=[0-9]+).*/\1 \2 \3 \4/'
  grep -oE '^[a-z_]+:|(y_miss_lengths|torch_absorbed_miss_lengths)=\{[^}]*\}' $OUT/oracle_short_$sd.log | tr '\n' ' '; echo; }; done
echo "total $(( $(date +%s) - t0 )) s"
cd $OUT && tar czf logs.tgz oracle_short_* build.log 2>/dev/null; rm -rf oracle_short_* build.log; ls $OUT
