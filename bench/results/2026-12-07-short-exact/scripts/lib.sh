# Sourced by call3.sh (call1.sh, as it ran, defines the same function itself): a release build for sm_90a of some
# targets, its log under $OUT.
bld() {  # bld DIR SRC JOBS TARGETS...
  local d=$1 s=$2 j=$3; shift 3
  cmake -S $s -B $d -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a > $OUT/build_$(basename $d).log 2>&1 &&
  cmake --build $d -j$j --target "$@" >> $OUT/build_$(basename $d).log 2>&1
}
