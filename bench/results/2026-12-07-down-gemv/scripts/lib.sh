# Sourced by the call scripts: a release build for sm_90a of some targets (log under $OUT), and fmt, which prints a
# latte-bench log's layer cases as "case=µs (attention phase|W_UV + out phase)".
build() {  # build DIR SRC TARGETS [CMAKE_ARGS]
  cmake -S $2 -B $1 -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a ${4:-} > $OUT/build_$(basename $1).log 2>&1 &&
  cmake --build $1 -j16 --target $3 >> $OUT/build_$(basename $1).log 2>&1
}
fmt() { grep -E '^mla (b|len|lens)' $1 | grep -v untuned | sed -E 's/^mla ([^:]*): ([0-9.]+) us \(floor ([0-9.]+).*graph: .*up_absorb ([0-9.]+), attention ([0-9.]+), combine ([0-9.]+), wuv_output ([0-9.]+).*/\1=\2 (\5|\7)/' | sed -E 's/ len / /; s/lens 1..8191 mixed/mixed/' | tr '\n' ' '; }
