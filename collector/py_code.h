// Python code objects on the collector thread: each (code object, first line) the shim saw
// (shim/py_stack.h) is read once, named (co_filename, co_name, co_qualname) and written as a
// PyCode record; an instruction offset becomes a line through the object's line table (3.10's
// co_linetable pairs, 3.11+'s location table), cached per (code, offset).
//
// The objects are read with process_vm_readv on this process, not with plain loads: this thread
// does not hold the GIL, and a code object seen by an app thread may have been freed (exec'd
// code, a dropped lambda) and its pymalloc arena unmapped before the collector gets to it; the
// system call then fails (EFAULT) where a load would crash. A freed object whose memory was
// reused is caught by its type and first line no longer matching.
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>
#include "runtime/stack_ring.h"
#include "trace/writer.h"

namespace cutrace {

class PyCodeTable {
 public:
  explicit PyCodeTable(TraceWriter& w) : w_(w) {}
  // The PyFrame (code id, line) of a raw frame; writes the PyCode record on first sight.
  trace::PyFrame frame(const PyRawFrame& f);
  size_t codes() const { return tables_.size(); }

 private:
  uint32_t code_id(const PyRawFrame& f);
  TraceWriter& w_;
  std::unordered_map<uint64_t, uint32_t> ids_;    // code address ^ first line << 48 -> id
  std::vector<std::string> tables_;               // per id - 1: the line table bytes
  std::vector<uint32_t> first_;                   // per id - 1: co_firstlineno
  std::unordered_map<uint64_t, uint32_t> lines_;  // id << 32 | offset -> line
};

// Line of the instruction at `lasti` (code units) from a line table: `minor` 10 reads 3.10's
// (byte delta, line delta) pairs, 11+ the location table. 0 when the instruction has no line.
uint32_t py_line(int minor, const std::string& table, uint32_t first_line, int32_t lasti);

// Text of a str object at `addr` as UTF-8 ("" if it cannot be read); exposed for tests.
bool py_read_str(uint64_t addr, std::string* out);

}  // namespace cutrace
