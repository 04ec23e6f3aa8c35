// The intercepted entry points by API index, as the shim's binding table numbers them (defined in
// shim/binding.cpp): the collector writes their names into the trace.
#pragma once
#include <cstddef>
#include <cstdint>

namespace cutrace {

size_t func_count();
const char* api_name(uint16_t api);

}  // namespace cutrace
