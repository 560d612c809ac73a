# fedanon_library(NAME SOURCES ... [PUBLIC deps...] [PRIVATE deps...])
# One static library fedanon_<NAME> with the alias fedanon::<NAME>, an explicit source list, the
# project's warning flags and the repository root on its include path (every include is written
# from the root: "common/engine/tips.h"). docs/architecture.md lists the libraries and the
# dependencies each may have; tools/check-architecture.sh enforces them from `cmake --graphviz`.
function(fedanon_library name)
  cmake_parse_arguments(L "" "" "SOURCES;PUBLIC;PRIVATE" ${ARGN})
  add_library(fedanon_${name} STATIC ${L_SOURCES})
  add_library(fedanon::${name} ALIAS fedanon_${name})
  target_include_directories(fedanon_${name} PUBLIC ${CMAKE_SOURCE_DIR})
  target_compile_options(fedanon_${name} PRIVATE ${FEDANON_WARNINGS})
  fedanon_link_items(public_deps ${L_PUBLIC})
  fedanon_link_items(private_deps ${L_PRIVATE})
  target_link_libraries(fedanon_${name} PUBLIC ${public_deps} PRIVATE ${private_deps})
endfunction()

# fedanon_executable(NAME SOURCES ... LIBS ...): an installed program with the project's warnings,
# built into ${CMAKE_BINARY_DIR}/bin (all four programs side by side, as `federation up` expects),
# linked with the static twins of cmake/StaticDependencies.cmake when FEDANON_STATIC_DEPS is on.
function(fedanon_executable name)
  cmake_parse_arguments(E "" "" "SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${E_SOURCES})
  target_compile_options(${name} PRIVATE ${FEDANON_WARNINGS})
  fedanon_link_items(libs ${E_LIBS})
  target_link_libraries(${name} PRIVATE ${libs})
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin
                                           FEDANON_STATIC_DEPS ${FEDANON_STATIC_DEPS})
  install(TARGETS ${name} RUNTIME DESTINATION bin)
endfunction()
