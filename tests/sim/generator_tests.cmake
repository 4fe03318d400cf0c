# Tests of the profile generator (GPU specs, model catalogue, cost model).
tandem_add_test(tandem_profile_generator_test LABEL core SOURCES profile_generator_test.cpp
                LIBS tandem_sim)
# The catalogue's tensor access sequences against its profiles.
tandem_add_test(tandem_sequence_generator_test LABEL core SOURCES sequence_generator_test.cpp
                LIBS tandem_sim)
