// The collector's side of one thread's chain of record chunks (runtime/thread_state.h): what is
// published, in order, with each drained chunk given back to the pool. Collector thread only.
#pragma once
#include <cstddef>
#include <cstdint>
#include "runtime/thread_state.h"

namespace cutrace {

// Whether `s` has at least `limit` unread records; `t0` receives the ticks of the limit-th.
bool scan_ahead(ThreadState* s, size_t limit, uint64_t* t0);
// The next unread record of `s` (packed, runtime/raw_pack.h) if its call began by `horizon`
// (ticks; Context records, whose t0 is 0, always), or nullptr. The pointer stays valid until the
// next call for `s`: moving to a thread's next chunk gives the drained one back to the pool.
const uint8_t* next_record(ThreadState* s, uint64_t horizon);
// Nothing published is left unread (once the owner has exited, nothing more will be).
bool fully_read(ThreadState* s);

}  // namespace cutrace
