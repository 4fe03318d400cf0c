# Included by src/CMakeLists.txt when TANDEM_HAVE_CUDA is ON: adds the CUDA backend to
# tandem_device. Plain C++ over the CUDA runtime API, so no CUDA language is enabled; the
# toolkit's headers come in through CUDA::cudart as system includes (no warnings from them).
if(NOT TARGET CUDA::cudart)
  message(FATAL_ERROR "CMakeLists.cuda.cmake needs find_package(CUDAToolkit) to have found CUDA::cudart")
endif()
target_sources(tandem_device PRIVATE ${CMAKE_CURRENT_LIST_DIR}/cuda_backend.cpp)
target_link_libraries(tandem_device PUBLIC CUDA::cudart)
# Public, so that code using the library can tell whether cuda_backend exists.
target_compile_definitions(tandem_device PUBLIC TANDEM_HAVE_CUDA=1)
