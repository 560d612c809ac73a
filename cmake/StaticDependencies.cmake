# The four programs (fedanon_executable) link gRPC, Protobuf, Abseil and yaml-cpp statically; the
# test and benchmark programs keep Debian's shared libraries. Started dynamically, `fedanon
# --version` spent 29 ms of CPU in the dynamic loader on the project's machines (64 libraries,
# 862 page faults, two thirds of them relocating and mapping the libraries), a third of a UCI
# Adult job; linked so, it takes about half (docs/performance.md, "Start-up"). OpenSSL, c-ares,
# zlib, re2, spdlog/fmt, prometheus-cpp and SQLite stay shared (the first three are patched most
# often by Debian's security updates; Debian ships no static spdlog, fmt or prometheus-cpp).
# A program linked so picks up a fixed gRPC, Protobuf, Abseil or yaml-cpp only when rebuilt:
# deploy/build.sh rebuilds; FEDANON_STATIC_DEPS=OFF links every program to the shared ones.
#
# How: each imported target of those packages that has a static archive beside its shared library
# gets a twin (an IMPORTED STATIC library, or an INTERFACE one for a header-only target) whose
# dependencies are the twins of the original's. The project's libraries name a dependency through
# fedanon_link_items(), a generator expression that picks the twin when the program being linked
# has the property FEDANON_STATIC_DEPS, the original otherwise. tests/lint's
# static_dependencies check asserts that no program loads a library it should not.

option(FEDANON_STATIC_DEPS
       "Link the four programs with static gRPC, Protobuf, Abseil and yaml-cpp" ON)

set(FEDANON_STATIC_DEP_PATTERN
    "^(absl::.*|gRPC::grpc\\+\\+|gRPC::grpc|gRPC::gpr|gRPC::upb|gRPC::address_sorting|protobuf::libprotobuf|yaml-cpp)$")

# The static archive beside an imported shared library `target` ("" if none).
function(fedanon_static_archive_of target out)
  set(location "")
  get_target_property(configs ${target} IMPORTED_CONFIGURATIONS)
  if(configs)
    foreach(config IN LISTS configs)
      get_target_property(location ${target} IMPORTED_LOCATION_${config})
      if(location)
        break()
      endif()
    endforeach()
  endif()
  if(NOT location)
    get_target_property(location ${target} IMPORTED_LOCATION)
  endif()
  set(archive "")
  if(location AND location MATCHES "\\.so(\\.[0-9.]+)?$")
    string(REGEX REPLACE "\\.so(\\.[0-9.]+)?$" ".a" candidate "${location}")
    if(EXISTS "${candidate}")
      set(archive "${candidate}")
    endif()
  endif()
  set(${out} "${archive}" PARENT_SCOPE)
endfunction()

# Creates the twins of every matching imported target of this directory (call it after the
# find_package calls).
function(fedanon_create_static_twins)
  set_property(GLOBAL PROPERTY FEDANON_STATIC_TWINNED "")
  if(NOT FEDANON_STATIC_DEPS)
    return()
  endif()
  get_directory_property(imported IMPORTED_TARGETS)
  set(twinned "")
  foreach(target IN LISTS imported)
    if(NOT target MATCHES "${FEDANON_STATIC_DEP_PATTERN}")
      continue()
    endif()
    get_target_property(type ${target} TYPE)
    string(REPLACE "::" "__" twin "static_twin__${target}")
    if(type STREQUAL "INTERFACE_LIBRARY")
      add_library(${twin} INTERFACE IMPORTED)
    elseif(type STREQUAL "SHARED_LIBRARY" OR type STREQUAL "UNKNOWN_LIBRARY")
      fedanon_static_archive_of(${target} archive)
      if(NOT archive)
        continue()
      endif()
      add_library(${twin} STATIC IMPORTED)
      set_target_properties(${twin} PROPERTIES IMPORTED_LOCATION "${archive}")
    else()
      continue()
    endif()
    foreach(property INTERFACE_INCLUDE_DIRECTORIES INTERFACE_SYSTEM_INCLUDE_DIRECTORIES
                     INTERFACE_COMPILE_DEFINITIONS INTERFACE_COMPILE_OPTIONS
                     INTERFACE_COMPILE_FEATURES)
      get_target_property(value ${target} ${property})
      if(value)
        set_target_properties(${twin} PROPERTIES ${property} "${value}")
      endif()
    endforeach()
    list(APPEND twinned ${target})
  endforeach()
  # The twins' dependencies: the original's, each twinned one replaced by its twin.
  foreach(target IN LISTS twinned)
    string(REPLACE "::" "__" twin "static_twin__${target}")
    get_target_property(deps ${target} INTERFACE_LINK_LIBRARIES)
    set(twin_deps "")
    if(deps)
      foreach(dep IN LISTS deps)
        if(dep IN_LIST twinned)
          string(REPLACE "::" "__" dep "static_twin__${dep}")
        endif()
        list(APPEND twin_deps "${dep}")
      endforeach()
    endif()
    set_target_properties(${twin} PROPERTIES INTERFACE_LINK_LIBRARIES "${twin_deps}")
  endforeach()
  set_property(GLOBAL PROPERTY FEDANON_STATIC_TWINNED "${twinned}")
endfunction()

# `out` = the items (link dependencies), each twinned one as a choice between its twin (when the
# program being linked has FEDANON_STATIC_DEPS) and itself.
function(fedanon_link_items out)
  get_property(twinned GLOBAL PROPERTY FEDANON_STATIC_TWINNED)
  set(items "")
  foreach(item IN LISTS ARGN)
    if(item IN_LIST twinned)
      string(REPLACE "::" "__" twin "static_twin__${item}")
      set(item "$<IF:$<BOOL:$<TARGET_PROPERTY:FEDANON_STATIC_DEPS>>,${twin},${item}>")
    endif()
    list(APPEND items "${item}")
  endforeach()
  set(${out} "${items}" PARENT_SCOPE)
endfunction()
