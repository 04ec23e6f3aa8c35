// CUDA resources named through NVTX (Meta "nvtx_name/...", collector/nvtx_meta.h) as the tools
// show them: "stream 7 (dataloader)".
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include "collector/nvtx_meta.h"
#include "trace/reader.h"

namespace cutrace::tools {

// The NVTX name of stream `sid` (by its handle), "" when it has none.
inline std::string_view nvtx_stream_name(const TraceReader& r, uint32_t sid) {
  auto it = r.streams().find(sid);
  return it == r.streams().end() ? std::string_view()
                                 : r.meta(resource_meta_key(NvtxResource::Stream, it->second.handle));
}
// "stream 7", or "stream 7 (dataloader)" when NVTX named it.
inline std::string stream_label(const TraceReader& r, uint32_t sid) {
  std::string l = "stream " + std::to_string(sid);
  std::string_view n = nvtx_stream_name(r, sid);
  if (!n.empty()) l.append(" (").append(n).append(")");
  return l;
}

}  // namespace cutrace::tools
