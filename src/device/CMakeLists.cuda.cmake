# Included by src/CMakeLists.txt when the CUDA toolkit is found: adds the CUDA backend.
target_sources(tandem_device PRIVATE ${CMAKE_CURRENT_LIST_DIR}/cuda_backend.cpp)
target_link_libraries(tandem_device PUBLIC CUDA::cudart)
target_compile_definitions(tandem_device PUBLIC TANDEM_HAVE_CUDA=1)
