#!/usr/bin/env bash
# Call 9 (H200): gpu_mla after its last edit (the unfolded cases restore the caller's LATTE_MLA_UV_COMBINE): the fold
# cases and the unfolded ones, and all of them again with the caller's LATTE_MLA_UV_COMBINE=0 (the describe check must
# then expect no fold anywhere).
set -u
. "$(dirname "$0")/lib.sh"
build $PWD/build-new . "gpu_mla" || { tail -30 $OUT/build_build-new.log; exit 1; }
cd build-new/tests
timeout 100 env LATTE_TEST_FILTER=split ./gpu_mla > $OUT/split.log 2>&1; echo "split rc $?: $(tail -1 $OUT/split.log)"; grep FAIL $OUT/split.log | head -5
timeout 100 env LATTE_TEST_FILTER=split LATTE_MLA_UV_COMBINE=0 ./gpu_mla > $OUT/split_off.log 2>&1; echo "split, caller UV_COMBINE=0 rc $?: $(tail -1 $OUT/split_off.log)"; grep FAIL $OUT/split_off.log | head -5
cd $OUT && tar czf logs.tgz *.log && rm -f *.log
