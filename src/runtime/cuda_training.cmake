# Included by src/CMakeLists.txt after tandem_training is defined: training on a CUDA device
# (runtime/job_device.hpp). Where libtorch has CUDA, its CUDA half builds into tandem_training.
# Elsewhere, with the CUDA toolkit found, the same file is compiled but never linked
# (tandem_cuda_compile_check) against the c10/cuda headers that Debian's CPU-only libtorch-dev
# ships, so that CI without a GPU or a CUDA libtorch still compiles it. Those headers include
# c10/cuda/impl/cuda_cmake_macros.h, which a CPU-only libtorch build does not generate; the
# check writes the one macro it defines into its own include folder.
if(TANDEM_HAVE_TORCH_CUDA)
  target_sources(tandem_training PRIVATE ${CMAKE_CURRENT_LIST_DIR}/cuda_job_device.cpp)
  message(STATUS "tandem: training on CUDA devices ON")
  return()
endif()
if(NOT TANDEM_HAVE_CUDA)
  message(STATUS "tandem: training on CUDA devices OFF (no CUDA toolkit: not even compiled)")
  return()
endif()
find_path(tandem_c10_cuda_headers c10/cuda/CUDAStream.h HINTS ${TORCH_INCLUDE_DIRS})
if(NOT tandem_c10_cuda_headers)
  message(STATUS "tandem: training on CUDA devices OFF (libtorch ships no c10/cuda headers: not compiled)")
  return()
endif()
set(shim ${CMAKE_CURRENT_BINARY_DIR}/cuda_compile_check_include)
if(NOT EXISTS ${tandem_c10_cuda_headers}/c10/cuda/impl/cuda_cmake_macros.h)
  file(WRITE ${shim}/c10/cuda/impl/cuda_cmake_macros.h
       "#pragma once\n// Written by src/runtime/cuda_training.cmake for a compile-only check.\n#define C10_CUDA_BUILD_SHARED_LIBS\n")
endif()
add_library(tandem_cuda_compile_check OBJECT ${CMAKE_CURRENT_LIST_DIR}/cuda_job_device.cpp)
target_include_directories(tandem_cuda_compile_check SYSTEM PRIVATE ${shim})
target_link_libraries(tandem_cuda_compile_check PRIVATE tandem_training CUDA::cudart)
target_compile_definitions(tandem_cuda_compile_check PRIVATE TANDEM_HAVE_TORCH_CUDA=1)
tandem_set_warnings(tandem_cuda_compile_check)
# The CUDA tests are compiled the same way (tests/runtime/CMakeLists.txt).
set(TANDEM_CUDA_COMPILE_CHECK_INCLUDE ${shim} CACHE INTERNAL "")
message(STATUS "tandem: training on CUDA devices compiled only (libtorch has no CUDA; tandem_cuda_compile_check)")
