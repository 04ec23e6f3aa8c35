// libFuzzer target: the trace reader (trace/reader.h) on arbitrary bytes in memory, every
// record visited and every accessor used, then `cutrace dump` (which prints every field of every
// record type) on the same bytes as a file.
#include <cstdint>
#include <string>
#include <string_view>

#include "test/fuzz/fuzz_cli.h"
#include "trace/reader.h"

namespace tf = cutrace::trace;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  cutrace::TraceReader r;
  std::string err;
  if (r.open_memory(bytes, "fuzz", &err)) {
    uint64_t sink = 0;
    r.read([&](const cutrace::Record& rec) {
      sink += rec.size() + rec.tail(sizeof(tf::RecHeader)).size();
      switch (rec.type()) {
        case tf::RecType::Kernel: sink += r.str(rec.as<tf::KernelRec>().name_id).size(); break;
        case tf::RecType::Api: sink += r.api_name(rec.as<tf::ApiRec>().api).size(); break;
        case tf::RecType::Range: sink += r.str(rec.as<tf::RangeRec>().name_id).size(); break;
        default: break;
      }
    });
    for (const auto& [k, v] : r.metas()) sink += r.meta(k).size() + v.size();
    for (const auto& [tid, name] : r.threads()) sink += r.str(name).size() + tid;
    sink += r.status().records + r.devices().size() + r.streams().size();
    r.close();
    if (sink == 42) return 0;  // keeps the loop from being optimised away
  }
  cutrace_fuzz::run_cli({"dump", cutrace_fuzz::write_input(data, size)});
  return 0;
}
