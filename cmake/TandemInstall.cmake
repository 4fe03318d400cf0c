# `cmake --install`: headers, the static libraries and a package config, so that another project
# can find_package(tandem) and link tandem::api (tests/install/ builds one).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(tandem_installed_libraries tandem_common tandem_device tandem_memory tandem_schedule
    tandem_model_options tandem_footprint tandem_runtime)
if(TANDEM_HAVE_TORCH)
  list(APPEND tandem_installed_libraries tandem_torch tandem_training tandem_api)
endif()
foreach(library IN LISTS tandem_installed_libraries)
  # Users see the names without the prefix: tandem::api, tandem::runtime...
  string(REPLACE "tandem_" "" exported ${library})
  set_target_properties(${library} PROPERTIES EXPORT_NAME ${exported})
endforeach()
install(TARGETS ${tandem_installed_libraries} EXPORT tandemTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/tandem DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
set(tandem_config_dir ${CMAKE_INSTALL_LIBDIR}/cmake/tandem)
install(EXPORT tandemTargets NAMESPACE tandem:: DESTINATION ${tandem_config_dir})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/tandemConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/tandemConfig.cmake
                              INSTALL_DESTINATION ${tandem_config_dir})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/tandemConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/tandemConfig.cmake ${PROJECT_BINARY_DIR}/tandemConfigVersion.cmake
        DESTINATION ${tandem_config_dir})
