# SPDX-License-Identifier: BSD-3-Clause
# `cmake --install`: the harness (fuzz_attention, and fuzz_attention_libfuzzer where clang built
# it), the plugin ABI's header, the shipped matrices, seeds and dictionary under share/attnfuzz/, a
# CMake package (find_package(attnfuzz): attnfuzz::plugin, attnfuzz::fuzz_attention) and a
# pkg-config file (attnfuzz.pc). tests/install_consumer is a kernel author's project built against
# an installed prefix (scripts/test_install.sh).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)
set(ATTNFUZZ_INSTALL_DATADIR ${CMAKE_INSTALL_DATADIR}/attnfuzz)
set(ATTNFUZZ_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/attnfuzz)

install(FILES include/attnfuzz/attnfuzz_plugin.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/attnfuzz)
install(TARGETS fuzz_attention RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# The installed binary finds the CUDA libraries (cuBLAS, cudart) where it was linked against them.
set_target_properties(fuzz_attention PROPERTIES INSTALL_RPATH_USE_LINK_PATH TRUE)
if(ATTNFUZZ_LIBFUZZER_BINARY)
  install(PROGRAMS ${ATTNFUZZ_LIBFUZZER_BINARY} DESTINATION ${CMAKE_INSTALL_BINDIR} OPTIONAL)
endif()
install(DIRECTORY corpus/matrix corpus/seeds DESTINATION ${ATTNFUZZ_INSTALL_DATADIR})
install(FILES corpus/attention.dict LICENSE DESTINATION ${ATTNFUZZ_INSTALL_DATADIR})

configure_package_config_file(cmake/package/attnfuzzConfig.cmake.in
  ${PROJECT_BINARY_DIR}/package/attnfuzzConfig.cmake
  INSTALL_DESTINATION ${ATTNFUZZ_INSTALL_CMAKEDIR}
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR CMAKE_INSTALL_BINDIR ATTNFUZZ_INSTALL_DATADIR)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/package/attnfuzzConfigVersion.cmake
  COMPATIBILITY SameMinorVersion ARCH_INDEPENDENT)
file(RELATIVE_PATH ATTNFUZZ_PC_TO_PREFIX /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
configure_file(cmake/package/attnfuzz.pc.in ${PROJECT_BINARY_DIR}/package/attnfuzz.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/package/attnfuzzConfig.cmake
              ${PROJECT_BINARY_DIR}/package/attnfuzzConfigVersion.cmake
        DESTINATION ${ATTNFUZZ_INSTALL_CMAKEDIR})
install(FILES ${PROJECT_BINARY_DIR}/package/attnfuzz.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
