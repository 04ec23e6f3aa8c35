// The unit test binary: every test/unit/*.cpp registers doctest cases; this file owns main().
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
