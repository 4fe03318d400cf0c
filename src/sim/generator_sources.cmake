# The profile generator's sources (GPU specs, model catalogue, cost model): part of tandem_sim.
set(TANDEM_SIM_GENERATOR_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/gpu_spec.cpp
  ${CMAKE_CURRENT_LIST_DIR}/profile_generator.cpp
  ${CMAKE_CURRENT_LIST_DIR}/catalog_attention.cpp
  ${CMAKE_CURRENT_LIST_DIR}/catalog_cost.cpp
  ${CMAKE_CURRENT_LIST_DIR}/catalog_gnmt.cpp
  ${CMAKE_CURRENT_LIST_DIR}/catalog_graph.cpp
  ${CMAKE_CURRENT_LIST_DIR}/catalog_inception.cpp
  ${CMAKE_CURRENT_LIST_DIR}/catalog_iteration.cpp
  ${CMAKE_CURRENT_LIST_DIR}/catalog_layers.cpp
  ${CMAKE_CURRENT_LIST_DIR}/catalog_lowering.cpp
  ${CMAKE_CURRENT_LIST_DIR}/catalog_lstm.cpp
  ${CMAKE_CURRENT_LIST_DIR}/catalog_mlp.cpp
  ${CMAKE_CURRENT_LIST_DIR}/catalog_mobilenetv2.cpp
  ${CMAKE_CURRENT_LIST_DIR}/catalog_nasnet.cpp
  ${CMAKE_CURRENT_LIST_DIR}/catalog_plain20.cpp
  ${CMAKE_CURRENT_LIST_DIR}/catalog_recurrent.cpp
  ${CMAKE_CURRENT_LIST_DIR}/catalog_registry.cpp
  ${CMAKE_CURRENT_LIST_DIR}/catalog_resnet.cpp
  ${CMAKE_CURRENT_LIST_DIR}/catalog_rhn.cpp
  ${CMAKE_CURRENT_LIST_DIR}/catalog_sequence.cpp
  ${CMAKE_CURRENT_LIST_DIR}/catalog_squeezenet.cpp
  ${CMAKE_CURRENT_LIST_DIR}/catalog_tensorflow.cpp
  ${CMAKE_CURRENT_LIST_DIR}/catalog_tacotron.cpp
  ${CMAKE_CURRENT_LIST_DIR}/catalog_transformer.cpp
  ${CMAKE_CURRENT_LIST_DIR}/catalog_vgg16.cpp
  CACHE INTERNAL "")
