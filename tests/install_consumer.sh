#!/bin/sh
# Installs latte into a scratch prefix, then builds and runs a tiny consumer against the installed
# package twice: with CMake's find_package(latte) and with pkg-config. Fails on any error.
set -eu
build=$1; consumer=$2; work=$3; cc=$4
rm -rf "$work"; mkdir -p "$work"
cmake --install "$build" --prefix "$work/prefix" >"$work/install.log"
# 1) CMake package
cmake -S "$consumer" -B "$work/cmake-build" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" >"$work/configure.log"
cmake --build "$work/cmake-build" >"$work/build.log"
"$work/cmake-build/consumer"
"$work/cmake-build/consumer_static"
# 2) pkg-config (shared library)
libdir=$(ls -d "$work"/prefix/lib*/pkgconfig | head -n 1)
PKG_CONFIG_PATH=$libdir; export PKG_CONFIG_PATH
$cc -std=c99 -Wall -Werror "$consumer/consumer.c" $(pkg-config --cflags --libs latte) -Wl,-rpath,"$(dirname "$libdir")" -o "$work/consumer_pc"
"$work/consumer_pc"
echo "install_consumer: 3 passed, 0 failed"
