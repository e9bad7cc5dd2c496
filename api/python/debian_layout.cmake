# Runs at install time, after the module went to <prefix>/${flopwatt_python_dir}.
# Below /usr (a Debian package, or an install straight into the system) the
# system Python looks in /usr/lib/python3/dist-packages, not in
# /usr/lib/python3.N/dist-packages (that is only searched below /usr/local).
# The module keeps its depth below lib/, so its RUNPATH still finds libflopwatt.
if(CMAKE_INSTALL_PREFIX STREQUAL "/usr" AND flopwatt_python_dir MATCHES "^lib/python3\\.[0-9]+/dist-packages$")
  set(from "$ENV{DESTDIR}/usr/${flopwatt_python_dir}")
  set(to "$ENV{DESTDIR}/usr/lib/python3/dist-packages")
  file(MAKE_DIRECTORY "${to}")
  file(RENAME "${from}/${flopwatt_python_file}" "${to}/${flopwatt_python_file}")
  message(STATUS "Moved: ${to}/${flopwatt_python_file}")
  # Only directories this install left empty; /usr/lib/python3.N itself is the
  # standard library on a real system.
  get_filename_component(parent "${from}" DIRECTORY)
  foreach(dir "${from}" "${parent}")
    file(GLOB left "${dir}/*")
    if(NOT left)
      file(REMOVE_RECURSE "${dir}")
    endif()
  endforeach()
endif()
