// NVTX category names in a trace: one Meta record per named category, key
// "nvtx_category/<id>/<domain name>" (the default domain: empty), value the name; CUDA resources
// named through NVTX (nvtxNameCuStream*, nvtxNameCudaStream*, devices, contexts, events): key
// "nvtx_name/<kind>/<handle>", the handle in hex (a device: its ordinal, decimal)
// (docs/FORMAT.md, Meta keys). Written by the collector, looked up by the tools.
#pragma once
#include <cstdint>
#include <cstdio>
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

enum class NvtxResource : uint8_t { Device = 1, Context = 2, Stream = 3, Event = 4 };
inline constexpr std::string_view kResourceMetaPrefix = "nvtx_name/";

// "nvtx_name/stream/0x7f00a0", "nvtx_name/device/0"; empty for an unknown kind.
inline std::string resource_meta_key(NvtxResource kind, uint64_t handle) {
  static const char* const kKinds[] = {"", "device", "context", "stream", "event"};
  const unsigned k = unsigned(kind);
  if (k < 1 || k > 4) return {};
  char h[24];
  std::snprintf(h, sizeof h, kind == NvtxResource::Device ? "%llu" : "0x%llx", static_cast<unsigned long long>(handle));
  return std::string(kResourceMetaPrefix) + kKinds[k] + '/' + h;
}

}  // namespace cutrace
