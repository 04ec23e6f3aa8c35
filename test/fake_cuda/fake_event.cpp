// Events. Recording stamps the event with max(stream ready time, now): the moment the virtual GPU
// reaches it. An event recorded on a capturing stream is accepted but carries no time, so
// cuEventElapsedTime rejects it, as it rejects CU_EVENT_DISABLE_TIMING and never-recorded events.
// FAKE_CUDA_IDLE_RECORD_STALL_NS: a record on an idle stream returns that late after its stamp.
#include <algorithm>

#include "test/fake_cuda/fake_internal.h"

namespace {

using fake::DefaultStream;
using fake::Lock;
using Recorded = CUevent_st::Recorded;

constexpr unsigned kValidEventFlags = CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;

CUresult destroyEvent(CUevent handle) {
  if (CUresult r = fake::checkInit()) return r;
  Lock lock = fake::lockState();
  CUevent_st* event = fake::lookup<CUevent_st>(handle);
  if (event == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  fake::unregisterHandle(event);
  delete event;
  ++fake::state().stats.events_destroyed;
  return CUDA_SUCCESS;
}

CUresult recordEvent(DefaultStream d, CUevent handle, CUstream hStream, unsigned flags) {
  Lock lock = fake::lockState();
  CUstream_st* stream = nullptr;
  if (CUresult r = fake::resolveStream(hStream, d, &stream)) return r;
  CUevent_st* event = fake::lookup<CUevent_st>(handle);
  if (event == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  int64_t stallNs = 0;
  if (stream->capture != nullptr) {
    event->recorded = Recorded::kInCapture;
  } else {
    event->recorded = Recorded::kOnStream;
    // Decided before the stamp: nothing but the stall itself may run between the stamp and the
    // return (the first call's set-up there made the first anchor ~3 us late).
    if (stream->readyNs <= fake::nowNs()) stallNs = fake::idleRecordStallNs();
    event->timeNs = std::max(stream->readyNs, fake::nowNs());
  }
  ++fake::state().stats.event_records;
  lock.unlock();
  if (stallNs > 0) fake::sleepUntil(fake::nowNs() + stallNs);
  return CUDA_SUCCESS;
}

CUresult recordEventWithFlags(DefaultStream d, CUevent handle, CUstream hStream, unsigned flags) {
  return recordEvent(d, handle, hStream, flags);
}

CUresult recordEventDefault(DefaultStream d, CUevent handle, CUstream hStream) {
  return recordEvent(d, handle, hStream, 0);
}

// Only events recorded on a (non-capturing) stream have a time; others complete at once.
int64_t completionNs(const CUevent_st* event) { return event->recorded == Recorded::kOnStream ? event->timeNs : 0; }

CUresult elapsedTime(float* pMilliseconds, CUevent hStart, CUevent hEnd) {
  if (CUresult r = fake::checkInit()) return r;
  if (pMilliseconds == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Lock lock = fake::lockState();
  const CUevent_st* start = fake::lookup<CUevent_st>(hStart);
  const CUevent_st* end = fake::lookup<CUevent_st>(hEnd);
  if (start == nullptr || end == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  for (const CUevent_st* e : {start, end}) {
    if ((e->flags & CU_EVENT_DISABLE_TIMING) || e->recorded != Recorded::kOnStream) {
      return CUDA_ERROR_INVALID_HANDLE;
    }
  }
  if (std::max(start->timeNs, end->timeNs) > fake::nowNs()) return CUDA_ERROR_NOT_READY;
  *pMilliseconds = static_cast<float>(static_cast<double>(end->timeNs - start->timeNs) / 1e6);
  return CUDA_SUCCESS;
}

}  // namespace

FAKE_API CUresult cuEventCreate(CUevent* phEvent, unsigned int Flags) {
  if (CUresult r = fake::checkInit()) return r;
  if (phEvent == nullptr || (Flags & ~kValidEventFlags) != 0) return CUDA_ERROR_INVALID_VALUE;
  Lock lock = fake::lockState();
  CUctx_st* ctx = nullptr;
  if (CUresult r = fake::requireContext(&ctx)) return r;
  CUevent_st* event = new CUevent_st;
  event->flags = Flags;
  fake::registerHandle(event, fake::Kind::kEvent);
  ++fake::state().stats.events_created;
  *phEvent = event;
  return CUDA_SUCCESS;
}

FAKE_API CUresult cuEventDestroy(CUevent hEvent) { return destroyEvent(hEvent); }

FAKE_API CUresult cuEventDestroy_v2(CUevent hEvent) { return destroyEvent(hEvent); }

FAKE_EXPORT_PTSZ(cuEventRecord, recordEventDefault, (CUevent hEvent, CUstream hStream), (hEvent, hStream))
FAKE_EXPORT_PTSZ(cuEventRecordWithFlags, recordEventWithFlags, (CUevent hEvent, CUstream hStream, unsigned int flags),
                 (hEvent, hStream, flags))

FAKE_API CUresult cuEventQuery(CUevent hEvent) {
  if (CUresult r = fake::checkInit()) return r;
  Lock lock = fake::lockState();
  const CUevent_st* event = fake::lookup<CUevent_st>(hEvent);
  if (event == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  return completionNs(event) <= fake::nowNs() ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

FAKE_API CUresult cuEventSynchronize(CUevent hEvent) {
  if (CUresult r = fake::checkInit()) return r;
  Lock lock = fake::lockState();
  const CUevent_st* event = fake::lookup<CUevent_st>(hEvent);
  if (event == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  int64_t doneNs = completionNs(event);
  ++fake::state().stats.syncs;
  lock.unlock();
  fake::sleepUntil(doneNs);
  return CUDA_SUCCESS;
}

FAKE_API CUresult cuEventElapsedTime(float* pMilliseconds, CUevent hStart, CUevent hEnd) {
  return elapsedTime(pMilliseconds, hStart, hEnd);
}

FAKE_API CUresult cuEventElapsedTime_v2(float* pMilliseconds, CUevent hStart, CUevent hEnd) {
  return elapsedTime(pMilliseconds, hStart, hEnd);
}
