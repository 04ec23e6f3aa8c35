// NVTX category names in a trace: one Meta record per named category, key
// "nvtx_category/<id>/<domain name>" (the default domain: empty), value the name
// (docs/FORMAT.md, Meta keys). Written by the collector, looked up by the tools.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace cutrace {

inline constexpr std::string_view kCategoryMetaPrefix = "nvtx_category/";

inline std::string category_meta_key(uint32_t id, std::string_view domain) {
  std::string k(kCategoryMetaPrefix);
  k += std::to_string(id);
  k += '/';
  k += domain;
  return k;
}

}  // namespace cutrace
