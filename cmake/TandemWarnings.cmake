# tandem_set_warnings(target): the project's warning set, as errors when TANDEM_WERROR is ON
# (scripts/test.sh and CI turn it on; a user's compiler may warn where ours does not).
function(tandem_set_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
      -Wold-style-cast -Wcast-align -Woverloaded-virtual -Wconversion -Wsign-conversion
      -Wimplicit-fallthrough>)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    # -Wextra makes GCC warn about the fields a designated initializer leaves out, which is how
    # tandem's request and option structs are meant to be filled: the rest keep their defaults
    # (`{.budget_bytes = b, .costs = c}` leaves a planning_request's stop token unset).
    target_compile_options(${target} PRIVATE
      $<$<COMPILE_LANGUAGE:CXX>:-Wno-missing-field-initializers>)
  endif()
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_GREATER_EQUAL 12
     AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 14)
    # GCC 12 and 13 at -O3 see impossible sizes in libstdc++'s inlined std::string concatenation
    # and raise -Wrestrict, -Wstringop-overflow and -Warray-bounds on correct code (GCC bugs
    # 105329, 105545, 105651), which made a plain Release build fail. Other compilers keep them.
    target_compile_options(${target} PRIVATE
      $<$<COMPILE_LANGUAGE:CXX>:-Wno-restrict -Wno-stringop-overflow -Wno-stringop-overread
        -Wno-array-bounds>)
  endif()
  if(TANDEM_WERROR)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
  endif()
endfunction()
