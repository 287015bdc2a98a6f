// The Catch2 main, compiled once into a static library shared by every test program.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
