# Helpers shared by every target of the project.

option(OMNIDP_SANITIZE "Build every omni-dp target with AddressSanitizer + UBSan (preset asan)" OFF)

# ASan + UBSan on one target when OMNIDP_SANITIZE is on (called by omnidp_warnings, so every
# omni-dp library, test and executable gets it; the link flags propagate to whatever links an
# omni-dp library). UB is fatal (-fno-sanitize-recover) so a test fails on the first report.
function(omnidp_sanitize target)
  if(OMNIDP_SANITIZE)
    target_compile_options(${target} PRIVATE $<$<CXX_COMPILER_ID:GNU,Clang>:
      -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer>)
    target_link_options(${target} PUBLIC $<$<CXX_COMPILER_ID:GNU,Clang>:-fsanitize=address,undefined>)
  endif()
endfunction()

# Warnings per target (never global).
function(omnidp_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<CXX_COMPILER_ID:GNU,Clang>:-Wall -Wextra -Wpedantic -Wshadow=local -Wnon-virtual-dtor
      -Wcast-align -Wunused -Woverloaded-virtual -Wnull-dereference -Wformat=2>)
  if(OMNIDP_WERROR)
    target_compile_options(${target} PRIVATE $<$<CXX_COMPILER_ID:GNU,Clang>:-Werror>)
  endif()
  omnidp_sanitize(${target})
  # pip's libtorch (the GPU machine) exports its own copy of std::filesystem, part of which is
  # broken (remove_all jumps to null). Naming libstdc++ first makes the dynamic linker bind the
  # std:: symbols of our code to libstdc++ itself. (Not in sanitizer builds: libasan must be first.)
  # The library file itself, not -lstdc++: a linker script behind -lstdc++ may re-impose
  # AS_NEEDED, and then no NEEDED entry for it is written at all (seen on Ubuntu 24.04).
  if(NOT OMNIDP_SANITIZE AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=libstdc++.so.6
                    OUTPUT_VARIABLE _libstdcxx OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(IS_ABSOLUTE "${_libstdcxx}")
      target_link_options(${target} PRIVATE "LINKER:--push-state,--no-as-needed" "${_libstdcxx}"
                          "LINKER:--pop-state")
    endif()
  endif()
endfunction()

# Unity builds of the libraries (not the tests): a library's sources compiled in batches of 8
# per translation unit, so the libtorch templates each source instantiates are compiled once per
# batch. Measured on the 2-core machine (docs/architecture.md, "Build time"). A source whose
# file-local names clash with another's is marked SKIP_UNITY_BUILD_INCLUSION where it is listed.
option(OMNIDP_UNITY_BUILD "Unity-build the omni-dp libraries" ON)

# omnidp_library(NAME area SOURCES ... DEPS ...): static library omnidp_<area>, alias omnidp::<area>.
function(omnidp_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;PUBLIC_DEPS;PRIVATE_DEPS" ${ARGN})
  add_library(omnidp_${name} STATIC ${ARG_SOURCES})
  add_library(omnidp::${name} ALIAS omnidp_${name})
  target_include_directories(omnidp_${name} PUBLIC ${PROJECT_SOURCE_DIR}/include)
  target_link_libraries(omnidp_${name} PUBLIC ${ARG_PUBLIC_DEPS} PRIVATE ${ARG_PRIVATE_DEPS})
  set_target_properties(omnidp_${name} PROPERTIES POSITION_INDEPENDENT_CODE ON
                        UNITY_BUILD ${OMNIDP_UNITY_BUILD} UNITY_BUILD_BATCH_SIZE 16)
  omnidp_warnings(omnidp_${name})
  install(TARGETS omnidp_${name} ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
endfunction()

# omnidp_torch_pch(target): every torch translation unit of the project reuses ONE precompiled
# <torch/torch.h> (parsing it costs over a minute per TU on a 2-core CI machine; loading the PCH
# a few seconds). GCC accepts a PCH only when -fpic/-fpie and the predefined macros match, so
# every user compiles with -fPIC (libraries already do; executables get it here) and the same
# warning flags (-Wpedantic undefines __cpp_runtime_arrays). -Winvalid-pch reports a rejected reuse.
function(omnidp_torch_pch target)
  if(NOT TARGET omnidp_torch_pch_host)
    file(WRITE ${PROJECT_BINARY_DIR}/omnidp_torch_pch_host.cpp "// host of the shared torch PCH\n")
    add_library(omnidp_torch_pch_host OBJECT ${PROJECT_BINARY_DIR}/omnidp_torch_pch_host.cpp)
    target_link_libraries(omnidp_torch_pch_host PRIVATE ${TORCH_LIBRARIES} fmt::fmt-header-only)
    set_target_properties(omnidp_torch_pch_host PROPERTIES POSITION_INDEPENDENT_CODE ON)
    target_precompile_headers(omnidp_torch_pch_host PRIVATE <torch/torch.h>)
    omnidp_warnings(omnidp_torch_pch_host)  # same flags as its users (-Wpedantic changes macros)
  endif()
  target_precompile_headers(${target} REUSE_FROM omnidp_torch_pch_host)
  # pip's libtorch headers may include its fmt: FMT_HEADER_ONLY must be the same in the PCH and
  # in every user, so all of them compile with fmt's header-only target.
  target_link_libraries(${target} PRIVATE fmt::fmt-header-only)
  target_compile_options(${target} PRIVATE $<$<CXX_COMPILER_ID:GNU,Clang>:-fPIC -Winvalid-pch>)
endfunction()

# The git revision at configure time, "unknown" outside a checkout. Only a checkout whose top
# is the source folder counts: a tree exported into a folder of another checkout (git archive)
# must not report that checkout's revision.
function(omnidp_git_revision out)
  set(rev "unknown")
  execute_process(COMMAND git rev-parse --show-toplevel
    WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
    OUTPUT_VARIABLE top OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE rc)
  if(rc EQUAL 0 AND NOT top STREQUAL "")
    file(REAL_PATH "${top}" top)
    file(REAL_PATH "${PROJECT_SOURCE_DIR}" source)
    if(top STREQUAL source)
      execute_process(COMMAND git rev-parse --short=12 HEAD
        WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
        OUTPUT_VARIABLE head OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE rc)
      if(rc EQUAL 0 AND NOT head STREQUAL "")
        set(rev "${head}")
      endif()
    endif()
  endif()
  set(${out} ${rev} PARENT_SCOPE)
endfunction()
