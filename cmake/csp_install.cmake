# Install and export every library, the headers, the tools, and a package
# config, so that an installed prefix is consumed with
#   find_package(csp CONFIG REQUIRED)
#   target_link_libraries(app PRIVATE csp::net csp::collectives)
include(CMakePackageConfigHelpers)

get_property(csp_libraries GLOBAL PROPERTY CSP_LIBRARIES)
install(TARGETS ${csp_libraries} EXPORT csp-targets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS csp-launch csp-nameserver csp-model csp-trace-merge RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
foreach(part csp iosched net collectives dataflow)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${part} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
          FILES_MATCHING PATTERN "*.hpp")
endforeach()

set(csp_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/csp)
install(EXPORT csp-targets NAMESPACE csp:: FILE csp-targets.cmake DESTINATION ${csp_cmake_dir})
# The build tree can be consumed too (CMAKE_PREFIX_PATH=<build dir>).
export(EXPORT csp-targets NAMESPACE csp:: FILE ${PROJECT_BINARY_DIR}/csp-targets.cmake)

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/csp-config.cmake.in
                              ${PROJECT_BINARY_DIR}/csp-config.cmake INSTALL_DESTINATION ${csp_cmake_dir})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/csp-config-version.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/csp-config.cmake ${PROJECT_BINARY_DIR}/csp-config-version.cmake
        DESTINATION ${csp_cmake_dir})
