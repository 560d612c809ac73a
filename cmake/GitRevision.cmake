# Writes ${CMAKE_BINARY_DIR}/generated/fedanon/build_info.h at build time (not only at configure
# time), so `--version` names the revision that was actually built. The header is rewritten only
# when its content changes, so an unchanged tree does not trigger rebuilds.
set(FEDANON_GENERATED_DIR ${CMAKE_BINARY_DIR}/generated)
file(MAKE_DIRECTORY ${FEDANON_GENERATED_DIR}/fedanon)
add_custom_target(fedanon_build_info
  COMMAND ${CMAKE_COMMAND}
    -DSOURCE_DIR=${CMAKE_SOURCE_DIR}
    -DOUTPUT=${FEDANON_GENERATED_DIR}/fedanon/build_info.h
    -DVERSION=${PROJECT_VERSION}
    -P ${CMAKE_SOURCE_DIR}/cmake/WriteBuildInfo.cmake
  BYPRODUCTS ${FEDANON_GENERATED_DIR}/fedanon/build_info.h
  COMMENT "Recording git revision")
