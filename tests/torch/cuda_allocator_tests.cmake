# Included at the end of tests/torch/CMakeLists.txt. The CUDA allocator test exists only when
# src/torch/cuda_allocator.cmake built the allocator, which it marks on tandem_torch.
get_target_property(tandem_torch_definitions tandem_torch INTERFACE_COMPILE_DEFINITIONS)
if("TANDEM_HAVE_TORCH_CUDA=1" IN_LIST tandem_torch_definitions)
  tandem_add_test(tandem_cuda_allocator_test LABEL cuda SOURCES cuda_allocator_test.cpp LIBS tandem_torch)
endif()
