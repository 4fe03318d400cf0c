# The profile generator's sources (GPU specs, model catalogue, cost model): part of tandem_sim.
set(TANDEM_SIM_GENERATOR_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/gpu_spec.cpp
  ${CMAKE_CURRENT_LIST_DIR}/profile_generator.cpp
  CACHE INTERNAL "")
