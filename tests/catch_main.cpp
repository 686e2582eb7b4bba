// The one Catch2 v2 main of the suite, compiled once into a static library. Every test TU
// defines CATCH_CONFIG_ENABLE_BENCHMARKING too, so its configuration matches this one.
#define CATCH_CONFIG_ENABLE_BENCHMARKING
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
