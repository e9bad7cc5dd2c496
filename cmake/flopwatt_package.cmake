# `cpack -G DEB` in the build directory: one Debian package of everything
# `cmake --install` puts down, installed below /usr. Its Depends are worked out
# by dpkg-shlibdeps from the libraries the binaries really link (so an optional
# dependency built OFF is not required), plus the Python the module was built
# for. A package built with FLOPWATT_NATIVE=ON runs only on CPUs like the one
# that built it.
set(CPACK_PACKAGE_NAME flopwatt)
set(CPACK_PACKAGE_VENDOR "flopwatt")
set(CPACK_PACKAGE_CONTACT "flopwatt developers <flopwatt@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "FLOP/s and FLOP/J of GEMMs, GPT-2 training steps and your own code")
set(CPACK_PACKAGE_DESCRIPTION
    "flopwatt measures time and energy (RAPL, batteries, hwmon, external meters) of GEMM microbenchmarks,\nllm.c GPT-2 training steps on CPU and NPU backends, and any program (flopwatt measure -- CMD),\nGoogle Benchmark suite or Python loop, with one headline rule for which figure is quotable.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
# DESTDIR staging with the real prefix, so the install scripts see /usr (not a
# staging directory) and put the Python module where /usr's Python looks.
set(CPACK_SET_DESTDIR ON)
set(CPACK_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# The shared library lives in the package itself: dpkg-shlibdeps must find it
# there rather than ask which package provides it.
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(deps "")
if(FLOPWATT_HAVE_PYTHON)
  # An extension module is built for one CPython minor version.
  math(EXPR next_minor "${FLOPWATT_PYTHON_VERSION_MINOR} + 1")
  list(APPEND deps "python3 (>= 3.${FLOPWATT_PYTHON_VERSION_MINOR})" "python3 (<< 3.${next_minor})")
endif()
# dpkg-shlibdeps says libopenblas0, which apt satisfies with the pthread build
# first; the OpenMP build is the one flopwatt was linked and measured with.
if(OPENBLAS_LIBRARY MATCHES "/openblas-openmp/")
  list(APPEND deps libopenblas0-openmp)
endif()
list(JOIN deps ", " CPACK_DEBIAN_PACKAGE_DEPENDS)
# What the public headers and examples build against, for users of the library.
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "g++, cmake | pkg-config, libbenchmark-dev")
include(CPack)
