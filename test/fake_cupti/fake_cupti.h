// Internal declarations of the fake CUPTI (build/test/fake_cupti/libcupti.so), for tests of CUPTI
// clients on the fake CUDA driver. It implements the entry points cutrace loads
// (collector/cupti_source.cpp) with the semantics of the real ones that such a client relies on;
// only the cupti* functions are exported (exports.map).
//
// Model. The fake driver reports every call of its stream-ordered entry points and every operation
// of its virtual GPU through hooks (test/fake_cuda/fake_cuda_cupti.h), installed when a client
// first subscribes or enables an activity kind.
//   - API callbacks (cupti_callbacks.cpp): every hooked call gets a fresh, increasing correlation
//     id; a subscriber that enabled the call's CUPTI_CB_DOMAIN_DRIVER_API id gets API_ENTER before
//     the driver does the work and API_EXIT after, both with that id. FAKE_CUPTI_SILENT_CALLS
//     (a comma-separated list of exported names) silences the callbacks of those calls, as for
//     a call CUPTI has no callback id for: their operations' records carry ids nobody saw.
//     A thread whose call got API_ENTER but not API_EXIT (its id switched off in between) gets no
//     callback for any later call, as the H200 showed. FAKE_CUPTI_CALL_US=N makes every hooked
//     call spend N us between its callbacks.
//   - Activity records (cupti_records.cpp): each kernel / copy / memset submitted while its kind is
//     enabled becomes a CUpti_ActivityKernel10 (kind CONCURRENT_KERNEL, or KERNEL if only that is
//     enabled) / CUpti_ActivityMemcpy6 / CUpti_ActivityMemset4 with the submitting call's
//     correlation id, written at submission into the buffer being filled (obtained from the
//     client's buffer-requested callback; a buffer that cannot be had drops the record, counted
//     by cuptiActivityGetNumDroppedRecords; so do the kernels named in FAKE_CUPTI_DROP_KERNELS,
//     a comma-separated list). A record is complete once its op's virtual end is
//     <= now; its timestamps are written when its buffer is delivered: the op's virtual span,
//     or 0 and 0 if the op is not complete then (that record has lost them for good).
//   - Flushes (cupti_flush.cpp): cuptiActivityFlushAll closes the buffer being filled, then
//     delivers, through the buffer-completed callback, the closed buffers in the order they were
//     filled: with flag 0 only while they hold complete records only (a buffer with one record in
//     flight stops the delivery there); with CUPTI_ACTIVITY_FLAG_FLUSH_FORCED all of them. A
//     buffer that fills is closed; it is delivered by a later flush (no worker thread).
//   - Detach (cuptiFinalize): the subscriber, its callback ids, the activity kinds, the registered
//     buffer and timestamp callbacks and any undelivered buffer are gone. A stranded thread stays
//     stranded (on the H200, detaching while threads were inside driver calls lost their GPU
//     times after the next attach, as switching the callbacks off does). Once a kind has been
//     enabled, CUPTI stays "armed" until it detaches: on the H200 every kernel launch then costs
//     about 1 us more, even with every kind off again. The fake counts the hooked calls made while
//     armed with no kind on (FAKE_CUPTI_REPORT prints them at exit).
//   - Timestamps: the virtual GPU's clock is CLOCK_MONOTONIC ns. A client that registered a
//     timestamp callback gets its clock: CLOCK_MONOTONIC plus the offset between the two measured at
//     registration, rounded to the microsecond (exactly 0 for a client that returns CLOCK_MONOTONIC,
//     as cutrace does, so that its GPU times are the model's to the nanosecond).
#pragma once

#include <cupti.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "test/fake_cuda/fake_cuda_cupti.h"

#define FAKE_CUPTI_API extern "C"

namespace fake_cupti {

int64_t nowNs();  // CLOCK_MONOTONIC

// The names in a comma-separated list in environment variable `var` (read once, at construction):
// the test switches FAKE_CUPTI_SILENT_CALLS and FAKE_CUPTI_DROP_KERNELS.
class EnvNameList {
 public:
  explicit EnvNameList(const char* var);
  bool has(const char* name) const;

 private:
  std::string list_;  // ",a,b," (empty: none)
};

// Installs the hooks into the fake driver (once); false if no fake driver is loaded.
bool installHooks();

// cupti_callbacks.cpp: the hooks around each driver call.
void apiEnter(FakeCudaApiCall* call);
void apiExit(FakeCudaApiCall* call);

// ---- activity records (cupti_records.cpp) and their delivery (cupti_flush.cpp) ------------------

// A record written into a buffer, waiting for its op's end.
struct PendingRecord {
  size_t offset;           // in the buffer
  int64_t startNs, endNs;  // the op's virtual span, CLOCK_MONOTONIC
};

// A client buffer: being filled, or closed and waiting for delivery.
struct Buffer {
  uint8_t* data = nullptr;
  size_t size = 0, used = 0;
  size_t maxRecords = 0;  // 0: as many as fit
  std::vector<PendingRecord> records;
};

// cuptiFinalize: resets the subscriber (cupti_callbacks.cpp) and the activity state.
void finalizeCallbacks();
void finalizeActivity();
// Whether CUPTI is armed (see the top) with no activity kind on (cupti_records.cpp).
bool armedIdle();

struct Activity {
  // Guards everything below. Held while calling the client's buffer-requested callback (CUPTI
  // calls it on the thread that needs a buffer), never while calling buffer-completed.
  std::mutex mu;
  CUpti_BuffersCallbackRequestFunc requested = nullptr;
  CUpti_BuffersCallbackCompleteFunc completed = nullptr;
  int64_t clientOffsetNs = 0;  // client clock - CLOCK_MONOTONIC (timestamp callback; else 0)
  bool kernel = false, concurrentKernel = false, memcpy = false, memset = false;  // enabled kinds
  bool armed = false;         // a kind was on since the last finalize
  Buffer filling;             // data null: none yet
  std::deque<Buffer> closed;  // in the order they were filled
  size_t dropped = 0;         // since the last cuptiActivityGetNumDroppedRecords
};

Activity& activity();

// The hook for each GPU operation: its record, if its kind is enabled.
void gpuOp(const FakeCudaGpuOp* op);
// Writes a delivered buffer's timestamps: each record's span if complete at `now`, else 0 and 0.
void stampRecords(const Activity& a, Buffer& b, int64_t now);

}  // namespace fake_cupti
