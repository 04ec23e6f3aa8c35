// The one name-pattern dialect (trace/name_pattern.h) shared by `summary --step-pattern` and the
// NVTX capture trigger (CUTRACE_CAPTURE_NVTX).
#include "trace/name_pattern.h"
#include <doctest/doctest.h>

using cutrace::trace::name_pattern_match;

TEST_CASE("name pattern: alternatives, classes and stars as the step pattern uses them") {
  CHECK(name_pattern_match("step_[0-9]*|ProfilerStep#[0-9]*", "ProfilerStep#3"));
  CHECK(name_pattern_match("fwd|bwd|opt*", "optimizer"));
  CHECK_FALSE(name_pattern_match("fwd|bwd|opt*", "forward"));
  CHECK(name_pattern_match("[^a-c]x", "dx"));
  CHECK_FALSE(name_pattern_match("[^a-c]x", "ax"));
  CHECK(name_pattern_match("*", ""));
  CHECK(name_pattern_match("a|", ""));  // an empty alternative matches the empty name
}

TEST_CASE("name pattern: a backslash makes '|', '*', '?' and '[' literal") {
  CHECK(name_pattern_match("a\\|b", "a|b"));
  CHECK_FALSE(name_pattern_match("a\\|b", "a"));
  CHECK_FALSE(name_pattern_match("a\\|b", "b"));
  CHECK(name_pattern_match("x\\*", "x*"));
  CHECK_FALSE(name_pattern_match("x\\*", "xy"));
  CHECK(name_pattern_match("\\?", "?"));
  CHECK_FALSE(name_pattern_match("\\?", "a"));
  CHECK(name_pattern_match("\\[0]", "[0]"));
  CHECK(name_pattern_match("[abc", "[abc"));  // an unclosed class is a literal '['
}

TEST_CASE("name pattern: '/' and leading dots are ordinary characters (names, not paths)") {
  CHECK(name_pattern_match("model/*", "model/layer.3/mlp"));
  CHECK(name_pattern_match("*mlp", ".mlp"));
}
