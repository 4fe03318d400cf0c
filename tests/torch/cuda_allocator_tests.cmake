# Included at the end of tests/torch/CMakeLists.txt. The CUDA allocator test exists only when
# src/torch/cuda_allocator.cmake built the allocator, which it marks on tandem_torch.
get_target_property(tandem_torch_definitions tandem_torch INTERFACE_COMPILE_DEFINITIONS)
if("TANDEM_HAVE_TORCH_CUDA=1" IN_LIST tandem_torch_definitions)
  tandem_add_test(tandem_cuda_allocator_test LABEL cuda SOURCES cuda_allocator_test.cpp LIBS tandem_torch)
elseif(TARGET tandem_cuda_compile_check)
  # Compiled, not linked, where libtorch has no CUDA (src/runtime/cuda_training.cmake).
  add_library(tandem_cuda_allocator_test_compile_check OBJECT cuda_allocator_test.cpp)
  target_include_directories(tandem_cuda_allocator_test_compile_check SYSTEM PRIVATE
                             ${TANDEM_CUDA_COMPILE_CHECK_INCLUDE})
  target_link_libraries(tandem_cuda_allocator_test_compile_check PRIVATE tandem_torch GTest::gtest
                        CUDA::cudart)
  target_compile_definitions(tandem_cuda_allocator_test_compile_check PRIVATE
                             TANDEM_HAVE_TORCH_CUDA=1)
  tandem_set_warnings(tandem_cuda_allocator_test_compile_check)
endif()
