set -u
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a > $OUT/build.log 2>&1 &&
  cmake --build build-gpu -j16 --target latte >> $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
export LATTE_LIBRARY=$PWD/build-gpu/liblatte.so
timeout 300 python3 .carry/t1.py 2>&1 | tee $OUT/t1.log
