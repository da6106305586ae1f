# Sourced by the call scripts: the base tree (a copy of this tree with .carry/base's files over it) and a release
# build for sm_90a of some targets (logs under $OUT).
base_copy() {
  mkdir -p /tmp/base && tar cf - --exclude='./build*' . | tar xf - -C /tmp/base && cp -r .carry/base/. /tmp/base/ ||
    { echo "base copy failed"; exit 1; }
}
build() {  # build DIR SRC TARGETS
  cmake -S $2 -B $1 -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a > $OUT/build_$(basename $1).log 2>&1 &&
  cmake --build $1 -j8 --target $3 >> $OUT/build_$(basename $1).log 2>&1
}
