# csp_library(<target> <export name> ...): the common set-up of every library
# of the project. Sources are the remaining arguments (none: header-only).
# Makes the namespaced alias csp::<export name> (what add_subdirectory users
# link), includes the project root in the build tree and <prefix>/include
# once installed, and records the target for csp_install.cmake.
function(csp_library target export_name)
  if(ARGN)
    add_library(${target} ${ARGN})
    set(scope PUBLIC)
  else()
    add_library(${target} INTERFACE)
    set(scope INTERFACE)
  endif()
  add_library(csp::${export_name} ALIAS ${target})
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${export_name})
  target_compile_features(${target} ${scope} cxx_std_20)
  target_include_directories(${target} ${scope}
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  set_property(GLOBAL APPEND PROPERTY CSP_LIBRARIES ${target})
endfunction()
