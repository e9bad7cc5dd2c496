# `cpack -G DEB` in the build directory: one Debian package per install
# COMPONENT, installed below /usr, laid out as Debian policy asks:
#   runtime  -> flopwatt           the programs, man page, completion, NPU device files
#   library  -> libflopwatt<SOVERSION>   libflopwatt.so.<SOVERSION>* alone
#   dev      -> libflopwatt-dev    headers, libflopwatt.so, CMake and pkg-config files
#   python   -> python3-flopwatt   the module, in /usr/lib/python3/dist-packages
# Each package's Depends are worked out by dpkg-shlibdeps from the libraries its
# own ELF files link (so an optional dependency built OFF is not required),
# plus the packages of this build it needs at exactly this version, plus the
# Python the module was built for. Every package carries the same copyright
# (DEP-5) and changelog in /usr/share/doc/<package>/. A package built with
# FLOPWATT_NATIVE=ON runs only on CPUs like the one that built it.

# Maintainer: whoever builds the package says who answers for it. The default
# is the checkout's git identity; without one, a placeholder that says what to set.
find_package(Git QUIET)
set(maintainer_default "")
if(GIT_EXECUTABLE AND NOT DEFINED CACHE{FLOPWATT_DEB_MAINTAINER})
  execute_process(COMMAND ${GIT_EXECUTABLE} -C ${PROJECT_SOURCE_DIR} config user.name
                  OUTPUT_VARIABLE git_name OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  execute_process(COMMAND ${GIT_EXECUTABLE} -C ${PROJECT_SOURCE_DIR} config user.email
                  OUTPUT_VARIABLE git_email OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(git_name AND git_email)
    set(maintainer_default "${git_name} <${git_email}>")
  endif()
endif()
set(FLOPWATT_DEB_PLACEHOLDER "Unset FLOPWATT_DEB_MAINTAINER <unset@flopwatt.invalid>")
if(NOT maintainer_default)
  set(maintainer_default "${FLOPWATT_DEB_PLACEHOLDER}")
endif()
set(FLOPWATT_DEB_MAINTAINER "${maintainer_default}" CACHE STRING
    "Maintainer field of the Debian packages, \"Name <email>\" (default: the checkout's git user.name and user.email)")
if(FLOPWATT_DEB_MAINTAINER STREQUAL FLOPWATT_DEB_PLACEHOLDER)
  message(STATUS "flopwatt: Debian packages get a placeholder Maintainer (no git user.name/user.email here): "
                 "configure with -DFLOPWATT_DEB_MAINTAINER=\"Name <email>\" before `cpack -G DEB`")
endif()

set(FLOPWATT_DEB_LIBRARY libflopwatt${PROJECT_VERSION_MAJOR})  # named after the SONAME, libflopwatt.so.<major>
set(packages flopwatt ${FLOPWATT_DEB_LIBRARY} libflopwatt-dev)
set(components runtime library dev)
if(FLOPWATT_HAVE_PYTHON)
  list(APPEND packages python3-flopwatt)
  list(APPEND components python)
endif()

# /usr/share/doc/<package>/{copyright,changelog.gz} for every package. They are
# left out of a plain `cmake --install` (EXCLUDE_FROM_ALL): only cpack's
# per-component installs put them down. The version has no Debian revision
# (the packaging lives in the sources), so the changelog is changelog.gz, not
# changelog.Debian.gz. Its date is the checkout's last commit, so two builds of
# one commit make the same bytes.
set(deb_dir ${CMAKE_BINARY_DIR}/deb)
set(changelog_date "")
if(GIT_EXECUTABLE)
  execute_process(COMMAND ${GIT_EXECUTABLE} -C ${PROJECT_SOURCE_DIR} log -1 --format=%cD
                  OUTPUT_VARIABLE changelog_date OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
endif()
if(NOT changelog_date)
  string(TIMESTAMP changelog_date "%a, %d %b %Y %H:%M:%S +0000" UTC)
endif()
file(WRITE ${deb_dir}/changelog
     "flopwatt (${PROJECT_VERSION}) unstable; urgency=medium\n\n"
     "  * Packaged by cpack from the flopwatt sources (cmake/flopwatt_package.cmake).\n\n"
     " -- ${FLOPWATT_DEB_MAINTAINER}  ${changelog_date}\n")
execute_process(COMMAND gzip -9n -c ${deb_dir}/changelog OUTPUT_FILE ${deb_dir}/changelog.gz RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "flopwatt: gzip failed on ${deb_dir}/changelog (${rc})")
endif()
foreach(package component IN ZIP_LISTS packages components)
  install(FILES ${PROJECT_SOURCE_DIR}/cmake/deb/copyright ${deb_dir}/changelog.gz
          DESTINATION share/doc/${package} COMPONENT ${component} EXCLUDE_FROM_ALL)
endforeach()

# The library's shlibs file: a package built against libflopwatt.so.<major>
# depends on this package at this version or later (dpkg-shlibdeps reads it).
# Written here rather than by CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS, which looks
# at every shared object of every package and warns about the Python module's
# missing SONAME (a module has none).
file(WRITE ${deb_dir}/shlibs "libflopwatt ${PROJECT_VERSION_MAJOR} ${FLOPWATT_DEB_LIBRARY} (>= ${PROJECT_VERSION})\n")
# dpkg runs ldconfig once after all packages of a run are unpacked when a
# package ships a library and activates this trigger (lintian requires it).
# CPack 3.25 also writes a postinst and postrm that call ldconfig themselves
# for any library below /usr/lib, with no setting to stop it: redundant, harmless,
# and what lintian's two maintscript-calls-ldconfig warnings are about.
file(WRITE ${deb_dir}/triggers "activate-noawait ldconfig\n")

set(CPACK_PACKAGE_NAME flopwatt)
set(CPACK_PACKAGE_VENDOR "flopwatt")
set(CPACK_PACKAGE_CONTACT "${FLOPWATT_DEB_MAINTAINER}")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
# DESTDIR staging with the real prefix, so the install scripts see /usr (not a
# staging directory) and put the Python module where /usr's Python looks.
set(CPACK_SET_DESTDIR ON)
set(CPACK_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SOURCE flopwatt)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# Depends on another package of this build are at exactly this version.
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)

set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME flopwatt)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION science)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_RUNTIME_DESCRIPTION "FLOP/s and FLOP/J of GEMMs, GPT-2 training steps and any program
flopwatt measures the time and energy (RAPL, batteries, hwmon, external
meters) of GEMM microbenchmarks, of llm.c GPT-2 training steps on CPU and
NPU backends, and of any program (flopwatt measure -- CMD), with one stated
rule for which figure is quotable. This package holds the programs, the
man page, the bash completion and the NPU device descriptions.")
# dpkg-shlibdeps says libopenblas0, which apt satisfies with the pthread build
# first; the OpenMP build is the one flopwatt was linked and measured with.
if(OPENBLAS_LIBRARY MATCHES "/openblas-openmp/")
  set(CPACK_DEBIAN_RUNTIME_PACKAGE_DEPENDS libopenblas0-openmp)
endif()

set(CPACK_DEBIAN_LIBRARY_PACKAGE_NAME ${FLOPWATT_DEB_LIBRARY})
set(CPACK_DEBIAN_LIBRARY_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_LIBRARY_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_LIBRARY_PACKAGE_CONTROL_EXTRA ${deb_dir}/shlibs ${deb_dir}/triggers)
set(CPACK_DEBIAN_LIBRARY_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_DEBIAN_LIBRARY_DESCRIPTION "flopwatt's measurement API (shared library)
libflopwatt opens named measurement windows around any code (flopwatt::Meter)
and reports the time, energy and average power of every power source the
machine has, judged by the same headline rule as the flopwatt program, and
gives Google Benchmark suites flopwatt's energy counters.")

set(CPACK_DEBIAN_DEV_PACKAGE_NAME libflopwatt-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_COMPONENT_DEV_DEPENDS library)
# What the public headers and examples build against.
set(CPACK_DEBIAN_DEV_PACKAGE_SUGGESTS "g++, cmake | pkg-config, libbenchmark-dev")
set(CPACK_DEBIAN_DEV_DESCRIPTION "flopwatt's measurement API (development files)
The headers flopwatt/meter.h and flopwatt/benchmark.h, the libflopwatt.so
link, the CMake package (find_package(flopwatt)) and the pkg-config file
for building programs against libflopwatt.")

set(CPACK_DEBIAN_PYTHON_PACKAGE_NAME python3-flopwatt)
set(CPACK_DEBIAN_PYTHON_PACKAGE_SECTION python)
set(CPACK_DEBIAN_PYTHON_PACKAGE_SHLIBDEPS ON)
set(CPACK_COMPONENT_PYTHON_DEPENDS library)
set(CPACK_DEBIAN_PYTHON_DESCRIPTION "flopwatt's measurement API (Python 3 module)
The flopwatt module: flopwatt.Meter opens named measurement windows around
Python code and reports their time, energy and average power, on top of
libflopwatt.")
if(FLOPWATT_HAVE_PYTHON)
  # An extension module is built for one CPython minor version.
  math(EXPR next_minor "${FLOPWATT_PYTHON_VERSION_MINOR} + 1")
  set(CPACK_DEBIAN_PYTHON_PACKAGE_DEPENDS
      "python3 (>= 3.${FLOPWATT_PYTHON_VERSION_MINOR}), python3 (<< 3.${next_minor})")
endif()
# The module links libflopwatt.so.<major>, which is in another package:
# dpkg-shlibdeps finds it in the build tree and the Depends above name its package.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${CMAKE_BINARY_DIR}/lib)
include(CPack)
