# Included by src/CMakeLists.txt inside if(TANDEM_HAVE_TORCH), after tandem_torch is defined: adds
# the pool as libtorch's CUDA allocator when the libtorch found was built with CUDA (2.x: it
# defines the torch_cuda target and TORCH_CUDA_LIBRARIES). A CPU-only libtorch, such as Debian's
# 1.13, adds nothing. The allocator also needs tandem's CUDA backend, whose streams jobs register.
set(tandem_torch_has_cuda OFF)
if(TARGET torch_cuda OR TORCH_CUDA_LIBRARIES)
  set(tandem_torch_has_cuda ON)
endif()

set(TANDEM_HAVE_TORCH_CUDA OFF)
if(tandem_torch_has_cuda AND TANDEM_HAVE_CUDA)
  set(TANDEM_HAVE_TORCH_CUDA ON)
elseif(tandem_torch_has_cuda)
  message(STATUS "tandem: libtorch has CUDA but tandem's CUDA backend is off (toolkit not found or TANDEM_WITH_CUDA=OFF); building without the CUDA allocator for libtorch")
endif()

if(TANDEM_HAVE_TORCH_CUDA)
  target_sources(tandem_torch PRIVATE ${CMAKE_CURRENT_LIST_DIR}/cuda_allocator.cpp)
  # The allocator calls into libtorch_cuda (CUDAPluggableAllocator, the cuBLAS handles) itself;
  # say so rather than rely on how TORCH_LIBRARIES happens to reach that library.
  if(TARGET torch_cuda)
    target_link_libraries(tandem_torch PUBLIC torch_cuda)
  endif()
  # Public: tests and users tell from it whether the CUDA allocator exists.
  target_compile_definitions(tandem_torch PUBLIC TANDEM_HAVE_TORCH_CUDA=1)
endif()
message(STATUS "tandem: libtorch CUDA allocator ${TANDEM_HAVE_TORCH_CUDA}")
