// Catch2 v2 main for the single-process suites.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
