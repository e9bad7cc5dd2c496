#!/bin/sh
# Builds the C++ example against flopwatt with pkg-config alone (no CMake):
# PKG_CONFIG_PATH=<prefix>/lib/pkgconfig sh build.sh OUT
set -eu
here=$(dirname "$0")
out=${1:-meter_example}
# The rpath lets the example find libflopwatt.so where pkg-config found it.
c++ -std=c++17 -O2 ${CXXFLAGS:-} "$here/../cpp_meter/main.cpp" -o "$out" $(pkg-config --cflags --libs flopwatt) \
  -Wl,-rpath,"$(pkg-config --variable=libdir flopwatt)"
