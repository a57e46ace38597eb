# libFuzzer targets (docs/Testing.md), included from the top-level
# CMakeLists.txt at its end. Configured with -DDASH_ENABLE_FUZZERS=ON
# (clang only; scripts/fuzz-smoke also turns on DASH_ENABLE_SANITIZERS): every
# library of the tree is built with -fsanitize=fuzzer-no-link (coverage), the
# targets link libFuzzer's main.

function(dash_add_fuzzer name)
  list(TRANSFORM ARGN PREPEND ${PROJECT_SOURCE_DIR}/fuzz/)
  add_executable(${name} ${ARGN})
  target_compile_options(${name} PRIVATE -fsanitize=fuzzer)
  # Replace the directory's link options: the shared ASan runtime
  # (-shared-libsan) cannot come first in the library list once libFuzzer's
  # archive pulls in libstdc++, so fuzzers link the static runtime. They load
  # no instrumented shared library, so one runtime is all there is.
  if(DASH_ENABLE_SANITIZERS)
    set_property(TARGET ${name} PROPERTY LINK_OPTIONS
                 -fsanitize=address,undefined,fuzzer)
  else()
    set_property(TARGET ${name} PROPERTY LINK_OPTIONS -fsanitize=fuzzer)
  endif()
  set_target_properties(${name} PROPERTIES
    RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/fuzz)
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/fuzz)
endfunction()

# (2) lib/Schedule on decoded problem parameters.
dash_add_fuzzer(dash-fuzz-schedule FuzzSchedule.cpp)
target_link_libraries(dash-fuzz-schedule PRIVATE DashSchedule)

# (3) runtime argument validation against the gtest fixture manifests.
dash_add_fuzzer(dash-fuzz-runtime FuzzRuntime.cpp)
target_link_libraries(dash-fuzz-runtime PRIVATE DashRuntime)
target_compile_definitions(dash-fuzz-runtime PRIVATE
  DASH_FUZZ_KERNEL_DIR="${PROJECT_SOURCE_DIR}/unittests/Runtime/Inputs/kernels")

# (1) parse + verify + dash-tile + dash-schedule (needs the compiler half).
if(DASH_ENABLE_COMPILER)
  dash_add_fuzzer(dash-fuzz-parse FuzzParse.cpp)
  llvm_update_compile_flags(dash-fuzz-parse)
  target_link_libraries(dash-fuzz-parse PRIVATE MLIRDash MLIRDashTransforms MLIR)
endif()

add_custom_target(dash-fuzzers)
add_dependencies(dash-fuzzers dash-fuzz-schedule dash-fuzz-runtime)
if(DASH_ENABLE_COMPILER)
  add_dependencies(dash-fuzzers dash-fuzz-parse)
endif()
