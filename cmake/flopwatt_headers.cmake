# Layering enforced by the build: a library's headers are reachable as
# "<folder>/<name>.h" only from targets that link that library. Each library
# gets an include root of its own in the build tree holding links to its own
# headers, and nothing adds the source root to the include path, so an
# include of a folder the target does not link fails to compile.
#
# flopwatt_expose_headers(target folder [RECURSE])
#   folder: path below the source root ("power", "workloads/gpt2");
#   RECURSE: subfolders' headers belong to the same library (npu/plan, npu/xdna ...).
function(flopwatt_expose_headers target folder)
  cmake_parse_arguments(E "RECURSE" "" "" ${ARGN})
  set(root ${CMAKE_BINARY_DIR}/include/${target})
  file(REMOVE_RECURSE ${root})  # a header removed from the tree must not linger here
  if(E_RECURSE)
    file(GLOB_RECURSE headers RELATIVE ${CMAKE_SOURCE_DIR} CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/${folder}/*.h)
  else()
    file(GLOB headers RELATIVE ${CMAKE_SOURCE_DIR} CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/${folder}/*.h)
  endif()
  foreach(h ${headers})
    get_filename_component(dir ${root}/${h} DIRECTORY)
    file(MAKE_DIRECTORY ${dir})
    file(CREATE_LINK ${CMAKE_SOURCE_DIR}/${h} ${root}/${h} SYMBOLIC)
  endforeach()
  target_include_directories(${target} PUBLIC ${root})
endfunction()
