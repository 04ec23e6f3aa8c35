// Synchronisations, event records and stream waits (cross-stream ordering), graph capture.
#include "shim/op.h"

namespace cutrace {
namespace {

using trace::SyncKind;

// Blocking synchronisations record their call stacks (CUTRACE_BACKTRACE, CUTRACE_PYTHON_STACKS); queries
// return at once and do not.
// Blocking ones publish their start before the call (an open Sync record if the process ends
// while the thread waits in it).
template <class PFN, class Call>
CUresult sync(const Binding& b, SyncKind kind, CUstream s, CUevent e, Call&& call) {
  bool blocks = kind == SyncKind::Context || kind == SyncKind::Stream || kind == SyncKind::Event;
  PFN real = b.fn<PFN>();
  Op op;
  if (!op.begin(b, RawKind::Sync, s, 0, blocks ? blocking_stack() : 0)) return call(real);
  op.rec().sub = uint8_t(kind);
  op.rec().ev.event = e;
  if (blocks)
    op.publish_sync(uint8_t(kind),
                    kind == SyncKind::Event ? reinterpret_cast<uint64_t>(e) : reinterpret_cast<uint64_t>(s));
  return op.end(call(real));
}

using PFN_ctx_sync = CUresult (*)();
CUresult ctx_sync(const Binding& b) {
  return sync<PFN_ctx_sync>(b, SyncKind::Context, nullptr, nullptr, [&](PFN_ctx_sync f) { return f(); });
}
using PFN_ctx_sync_v2 = CUresult (*)(CUcontext);
CUresult ctx_sync_v2(const Binding& b, CUcontext c) {
  return sync<PFN_ctx_sync_v2>(b, SyncKind::Context, nullptr, nullptr, [&](PFN_ctx_sync_v2 f) { return f(c); });
}
using PFN_stream = CUresult (*)(CUstream);
CUresult stream_sync(const Binding& b, CUstream s) {
  return sync<PFN_stream>(b, SyncKind::Stream, s, nullptr, [&](PFN_stream f) { return f(s); });
}
CUresult stream_query(const Binding& b, CUstream s) {
  return sync<PFN_stream>(b, SyncKind::StreamQuery, s, nullptr, [&](PFN_stream f) { return f(s); });
}
using PFN_event = CUresult (*)(CUevent);
CUresult event_sync(const Binding& b, CUevent e) {
  return sync<PFN_event>(b, SyncKind::Event, nullptr, e, [&](PFN_event f) { return f(e); });
}
CUresult event_query(const Binding& b, CUevent e) {
  return sync<PFN_event>(b, SyncKind::EventQuery, nullptr, e, [&](PFN_event f) { return f(e); });
}

using PFN_wait = CUresult (*)(CUstream, CUevent, unsigned);
CUresult stream_wait(const Binding& b, CUstream s, CUevent e, unsigned flags) {
  return traced_call<PFN_wait>(
      b, RawKind::StreamWait, s, [&](RawRecord& r, CUresult) { r.ev.event = e; },
      [&](PFN_wait f) { return f(s, e, flags); });
}

using PFN_record = CUresult (*)(CUevent, CUstream);
CUresult event_record(const Binding& b, CUevent e, CUstream s) {
  return traced_call<PFN_record>(
      b, RawKind::EventRecord, s, [&](RawRecord& r, CUresult) { r.ev.event = e; },
      [&](PFN_record f) { return f(e, s); });
}
using PFN_record_flags = CUresult (*)(CUevent, CUstream, unsigned);
CUresult event_record_flags(const Binding& b, CUevent e, CUstream s, unsigned flags) {
  return traced_call<PFN_record_flags>(
      b, RawKind::EventRecord, s, [&](RawRecord& r, CUresult) { r.ev.event = e; },
      [&](PFN_record_flags f) { return f(e, s, flags); });
}

// Graph capture: count captures in progress so launches can skip timing events on capturing
// streams (an event recorded there would become part of the graph).
void capture_started(CUresult r) {
  if (r == CUDA_SUCCESS) g_active_captures.fetch_add(1, std::memory_order_relaxed);
}
using PFN_begin_capture = CUresult (*)(CUstream, CUstreamCaptureMode);
CUresult begin_capture(const Binding& b, CUstream s, CUstreamCaptureMode mode) {
  CUresult r = b.fn<PFN_begin_capture>()(s, mode);
  capture_started(r);
  return r;
}
using PFN_begin_capture_v1 = CUresult (*)(CUstream);
CUresult begin_capture_v1(const Binding& b, CUstream s) {
  CUresult r = b.fn<PFN_begin_capture_v1>()(s);
  capture_started(r);
  return r;
}
using PFN_begin_capture_graph = CUresult (*)(CUstream, CUgraph, const CUgraphNode*, const CUgraphEdgeData*, size_t,
                                             CUstreamCaptureMode);
CUresult begin_capture_graph(const Binding& b, CUstream s, CUgraph g, const CUgraphNode* deps,
                             const CUgraphEdgeData* data, size_t n, CUstreamCaptureMode mode) {
  CUresult r = b.fn<PFN_begin_capture_graph>()(s, g, deps, data, n, mode);
  capture_started(r);
  return r;
}
using PFN_end_capture = CUresult (*)(CUstream, CUgraph*);
CUresult end_capture(const Binding& b, CUstream s, CUgraph* g) {
  CUresult r = b.fn<PFN_end_capture>()(s, g);
  if (r == CUDA_SUCCESS || r == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED || r == CUDA_ERROR_STREAM_CAPTURE_UNJOINED)
    if (g_active_captures.fetch_sub(1, std::memory_order_relaxed) <= 0)
      g_active_captures.store(0, std::memory_order_relaxed);
  return r;
}

}  // namespace

CUTRACE_DIRECT_WHEN_OFF(ctx_sync)
CUTRACE_DIRECT_WHEN_OFF(ctx_sync_v2)
CUTRACE_DIRECT_WHEN_OFF(stream_sync)
CUTRACE_DIRECT_WHEN_OFF(stream_query)
CUTRACE_DIRECT_WHEN_OFF(event_sync)
CUTRACE_DIRECT_WHEN_OFF(event_query)
CUTRACE_DIRECT_WHEN_OFF(stream_wait)
CUTRACE_DIRECT_WHEN_OFF(event_record)
CUTRACE_DIRECT_WHEN_OFF(event_record_flags)
}  // namespace cutrace

using namespace cutrace;
// cuda.h maps these names to their newest ABI; here they name the older exported symbols.
#undef cuStreamBeginCapture
#undef cuStreamBeginCapture_ptsz
CUTRACE_FUNC(f_ctx_sync, PFN_ctx_sync, ctx_sync, "cuCtxSynchronize", 2000, cuCtxSynchronize)
CUTRACE_FUNC(f_ctx_sync_v2, PFN_ctx_sync_v2, ctx_sync_v2, "cuCtxSynchronize", 13000, cuCtxSynchronize_v2)
CUTRACE_FUNC_PT(f_stream_sync, PFN_stream, stream_sync, "cuStreamSynchronize", 2000, cuStreamSynchronize,
                cuStreamSynchronize_ptsz)
CUTRACE_FUNC_PT(f_stream_query, PFN_stream, stream_query, "cuStreamQuery", 2000, cuStreamQuery, cuStreamQuery_ptsz)
CUTRACE_FUNC(f_event_sync, PFN_event, event_sync, "cuEventSynchronize", 2000, cuEventSynchronize)
CUTRACE_FUNC(f_event_query, PFN_event, event_query, "cuEventQuery", 2000, cuEventQuery)
CUTRACE_FUNC_PT(f_stream_wait, PFN_wait, stream_wait, "cuStreamWaitEvent", 3020, cuStreamWaitEvent,
                cuStreamWaitEvent_ptsz)
CUTRACE_FUNC_PT(f_event_record, PFN_record, event_record, "cuEventRecord", 2000, cuEventRecord, cuEventRecord_ptsz)
CUTRACE_FUNC_PT(f_event_record_flags, PFN_record_flags, event_record_flags, "cuEventRecordWithFlags", 11010,
                cuEventRecordWithFlags, cuEventRecordWithFlags_ptsz)
CUTRACE_FUNC_PT(f_begin_capture, PFN_begin_capture, begin_capture, "cuStreamBeginCapture", 10010,
                cuStreamBeginCapture_v2, cuStreamBeginCapture_v2_ptsz)
CUTRACE_FUNC_PT(f_begin_capture_v1, PFN_begin_capture_v1, begin_capture_v1, "cuStreamBeginCapture", 10000,
                cuStreamBeginCapture, cuStreamBeginCapture_ptsz)
CUTRACE_FUNC_PT(f_begin_capture_graph, PFN_begin_capture_graph, begin_capture_graph, "cuStreamBeginCaptureToGraph",
                12030, cuStreamBeginCaptureToGraph, cuStreamBeginCaptureToGraph_ptsz)
CUTRACE_FUNC_PT(f_end_capture, PFN_end_capture, end_capture, "cuStreamEndCapture", 10000, cuStreamEndCapture,
                cuStreamEndCapture_ptsz)
