# Tests of the profile generator (GPU specs, model catalogue, cost model).
tandem_add_test(tandem_profile_generator_test LABEL core SOURCES profile_generator_test.cpp
                LIBS tandem_sim)
