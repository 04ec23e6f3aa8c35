#include "collector/ops.h"
#include <algorithm>
#include "collector/cupti_source.h"
#include "collector/names.h"
#include "runtime/driver.h"
#include "runtime/ticks.h"

namespace cutrace {

uint32_t OpResolver::stream_id(CUstream handle, CUcontext ctx, uint32_t tid, bool per_thread, uint16_t device) {
  uint64_t h = reinterpret_cast<uint64_t>(handle);
  uint16_t flags = 0;
  Key key{h, 0, 0};
  if (h == 0 && per_thread) h = reinterpret_cast<uint64_t>(CU_STREAM_PER_THREAD);
  if (h == 0) h = reinterpret_cast<uint64_t>(CU_STREAM_LEGACY);
  if (h == reinterpret_cast<uint64_t>(CU_STREAM_LEGACY)) {
    key = {h, reinterpret_cast<uint64_t>(ctx), 0};
    flags = trace::kStreamLegacyDefault;
  } else if (h == reinterpret_cast<uint64_t>(CU_STREAM_PER_THREAD)) {
    key = {h, reinterpret_cast<uint64_t>(ctx), tid};
    flags = trace::kStreamPerThreadDefault;
  } else {
    key = {h, 0, 0};
  }
  auto it = by_key_.find(key);
  if (it != by_key_.end()) return it->second->id;
  auto* s = new Stream();
  s->id = uint32_t(streams_.size() + 1);
  s->ctx = ctx;
  streams_.push_back(s);
  by_key_.emplace(key, s);
  trace::StreamRec r{};
  r.stream = s->id;
  r.device = device;
  r.flags = flags;
  r.handle = h;
  w_.add(r, trace::RecType::Stream);
  return s->id;
}

void OpResolver::add(PendingOp&& op) {
  Stream& s = *streams_[op.op().stream - 1];
  op.seq = next_seq_++;
  if (s.wait_seq || s.wait_end) {
    op.dep_seq = s.wait_seq;
    op.dep_end = s.wait_end;
    s.wait_seq = 0, s.wait_end = 0;
  }
  s.last_seq = op.seq;
  op.after_not_sampled = s.last_not_sampled;
  s.last_not_sampled = (op.op().flags & trace::kOpNotSampled) != 0;
  if (op.cupti && op.cupti_corr && op.op().cpu_end >= s.last_cupti_end)
    s.last_cupti_corr = op.cupti_corr, s.last_cupti_end = op.op().cpu_end;
  // Nothing to wait for and nothing before it on its stream: written now, never queued.
  if (s.q.empty() && !op.timed && !op.cupti) {
    finalize(s, op);
    return;
  }
  // Keep each queue in submission order: a record published late goes before later ones.
  auto pos = s.q.end();
  while (pos != s.q.begin() && std::prev(pos)->op().cpu_end > op.op().cpu_end) --pos;
  s.q.insert(pos, std::move(op));
  ++pending_;
}

void OpResolver::event_recorded(CUevent app_event, uint32_t stream_id) {
  if (!stream_id || stream_id > streams_.size()) return;
  Stream& s = *streams_[stream_id - 1];
  if (!s.q.empty()) {
    marks_[app_event] = {s.q.back().seq, 0};
    wanted_.insert(s.q.back().seq);
  } else {
    marks_[app_event] = {0, s.last_end};
  }
}

void OpResolver::stream_waits(uint32_t stream_id, CUevent app_event) {
  auto it = marks_.find(app_event);
  if (!stream_id || stream_id > streams_.size() || it == marks_.end()) return;
  Stream& s = *streams_[stream_id - 1];
  if (it->second.seq) s.wait_seq = std::max(s.wait_seq, it->second.seq);
  else s.wait_end = std::max(s.wait_end, it->second.end);
}

bool OpResolver::cupti_settled() {
  for (Stream* s : streams_) {
    if (s->last_cupti_corr && !cupti_final(s->last_cupti_corr)) return false;
    s->last_cupti_corr = 0;
  }
  return true;
}

size_t OpResolver::poll(bool all, int64_t grace_ns) {
  const int64_t horizon = all ? INT64_MAX : mono_ns() - grace_ns;
  for (Stream* s : streams_) {
    // The completed prefix of the queue, finalized in the order the GPU ran it: threads that
    // share a stream may have been drained in a slightly different order than they submitted.
    size_t k = 0;
    while (k < s->q.size() && s->q[k].op().cpu_end < horizon && (resolve(s->q[k]) || cupti_overtaken(*s, k))) ++k;
    if (k == 0) continue;
    auto by_end = [](const PendingOp& a, const PendingOp& b) { return a.end_ns < b.end_ns; };
    if (!std::is_sorted(s->q.begin(), s->q.begin() + long(k), by_end))  // usually they are
      std::stable_sort(s->q.begin(), s->q.begin() + long(k), by_end);
    for (size_t i = 0; i < k; ++i) finalize(*s, s->q[i]);
    s->q.erase(s->q.begin(), s->q.begin() + long(k));
    pending_ -= k;
  }
  if (ends_.size() > 200000) ends_.clear();
  if (marks_.size() > 200000) marks_.clear();
  return pending_;
}

// A CUPTI operation whose record has not come although a later operation of its stream, submitted
// after it returned (so ordered after it on the GPU), has its final span: its record would have
// been delivered by the same flush, so none will come. Written without GPU time (counted) instead
// of holding up the stream for resolve()'s 10 s. Looks at the next 16 CUPTI operations only,
// past any number of others (with --gpu-sample, the next window's).
bool OpResolver::cupti_overtaken(const Stream& s, size_t k) const {
  const PendingOp& op = s.q[k];
  if (!op.cupti) return false;
  int looked = 0;
  for (size_t j = k + 1; j < s.q.size() && looked < 16; ++j) {
    const PendingOp& later = s.q[j];
    if (!later.cupti) continue;
    ++looked;
    if (later.op().cpu_begin > op.op().cpu_end && cupti_final(later.cupti_corr)) return true;
  }
  return false;
}

bool OpResolver::resolve(PendingOp& op) {
  if (op.cupti) {
    // A call CUPTI gave no correlation id (no callback for it) gets no activity record either:
    // nothing to wait for (written without GPU time, counted by write()).
    if (op.cupti_corr == 0) return true;
    const bool graph = op.type == trace::RecType::Kernel && op.rec.kernel.kind == uint8_t(trace::KernelKind::Graph);
    if (cupti_take(op.cupti_corr, &op.start_ns, &op.end_ns, graph ? &op.graph_nodes : nullptr)) return true;
    return mono_ns() - op.op().cpu_end > 10000000000;  // never reported: give up after 10 s
  }
  if (!op.timed || !op.ev_end || !op.gctx) return true;  // no GPU time to wait for
  if (op.gctx->count == 0) return false;                 // its context's first clock anchor is still to come
  CUresult q = driver().cuEventQuery(op.ev_end);
  if (q == CUDA_ERROR_NOT_READY) return false;
  if (op.dep_seq) {
    auto e = ends_.find(op.dep_seq);
    if (e != ends_.end()) op.dep_end = std::max(op.dep_end, e->second);
    else if (wanted_.count(op.dep_seq)) return false;  // the op it waits for is not resolved yet
  }
  trace::OpCommon& c = op.op();
  op.end_ns = q == CUDA_SUCCESS ? clock_.to_host(*op.gctx, op.ev_end, c.cpu_end) : 0;
  if (op.end_ns && op.ev_start) op.start_ns = clock_.to_host(*op.gctx, op.ev_start, c.cpu_begin);
  return true;
}

// Start = measured start (exact mode) or the host submission time, and never before the end of
// the previous operation on the stream or of the operation the stream waited for.
void OpResolver::finalize(Stream& s, PendingOp& op) {
  if (!op.end_ns) return write(s, op, 0, 0, trace::kOpNoGpuTime);
  const trace::OpCommon& c = op.op();
  uint16_t flags = 0;
  int64_t start = op.start_ns;
  if (op.cupti) return write(s, op, op.start_ns, op.end_ns, 0);  // measured by CUPTI
  if (!op.ev_start && op.after_not_sampled) {
    // The first timed op of a sample window: the previous op's end is unknown, and its own start
    // with it. Written without GPU time, as if outside the window; its end still bounds the next.
    op.timed = false;
    int64_t end = op.end_ns;
    write(s, op, 0, 0, trace::kOpNoGpuTime | trace::kOpNotSampled);
    s.last_end = std::max(s.last_end, end);
    return;
  }
  if (!op.ev_start) {
    // Work starts after its submission: the call's return for async work, unless the work
    // was already done by then (a long call), and the call's entry for blocking work.
    start = (op.blocking || c.cpu_end >= op.end_ns) ? c.cpu_begin : c.cpu_end;
    flags = trace::kOpInferredStart;
  }
  start = std::max({start, s.last_end, op.dep_end});
  if (start > op.end_ns) start = op.end_ns;
  write(s, op, start, op.end_ns, flags);
}

void OpResolver::write(Stream& s, PendingOp& op, int64_t start, int64_t end, uint16_t flags) {
  trace::OpCommon& c = op.op();
  if (op.timed && !end) ++missing_;
  if (op.cupti && op.cupti_corr == s.last_cupti_corr) s.last_cupti_corr = 0;  // its span is taken
  c.gpu_start = start;
  c.gpu_end = end;
  if (end && !op.graph_nodes.empty()) flags |= trace::kOpGraphNodes;
  c.flags |= flags;
  if (end > s.last_end) s.last_end = end;  // never backwards: a late record cannot reorder the past
  if (wanted_.erase(op.seq)) ends_[op.seq] = end ? end : s.last_end;
  if (end) s.unconfirmed.clear();
  else if (op.cupti && op.cupti_corr && s.unconfirmed.size() < kUnconfirmedKept && !(c.flags & trace::kOpPendingExit))
    s.unconfirmed.push_back({op.rec, op.type, op.seq, op.coll_seq, op.stack});
  if (op.coll_seq && !(c.flags & trace::kOpPendingExit)) {
    ++coll_done_;
    done_coll_.push_back({op.coll_seq, c.corr, start, end, op.rec.kernel.name_id, c.stream, c.tid, c.device});
    if (done_coll_.size() > kDoneCollectivesKept) done_coll_.pop_front();
  }
  w_.append(&op.rec);
  if (c.flags & trace::kOpGraphNodes) write_graph_nodes(op);
  if (!op.ranges.empty()) ranges_.op_done(op.ranges, start, end);
  release_events(op);
}

// The operations of a graph replay, after its Graph record: each with the launch's OpCommon (flag
// GraphNode instead of GraphNodes) and its own GPU span, name or bytes.
void OpResolver::write_graph_nodes(PendingOp& op) {
  trace::OpCommon c = op.rec.kernel.op;
  c.flags = uint16_t((c.flags & ~trace::kOpGraphNodes) | trace::kOpGraphNode);
  for (const CuptiGraphNode& g : op.graph_nodes) {
    c.gpu_start = g.start, c.gpu_end = g.end;
    if (g.type == CuptiGraphNode::Kernel) {
      trace::KernelRec k = op.rec.kernel;
      k.op = c;
      k.kind = uint8_t(trace::KernelKind::Kernel);
      auto it = graph_kernel_names_.find(g.name);
      if (it == graph_kernel_names_.end())
        it = graph_kernel_names_
                 .emplace(g.name, w_.intern(g.name.empty() ? "<unknown kernel>" : demangle(g.name.c_str())))
                 .first;
      k.name_id = it->second;
      std::copy(g.grid, g.grid + 3, k.grid);
      std::copy(g.block, g.block + 3, k.block);
      k.dyn_smem = g.dyn_smem, k.static_smem = g.static_smem, k.regs = g.regs;
      w_.append(&k);
    } else if (g.type == CuptiGraphNode::Memcpy) {
      trace::MemcpyRec m{};
      m.op = c;
      m.op.flags |= trace::kOpAsync;
      m.bytes = g.bytes, m.copy_kind = g.copy_kind, m.src_kind = g.src_kind, m.dst_kind = g.dst_kind;
      m.src_device = m.dst_device = c.device;
      w_.add(m, trace::RecType::Memcpy);
    } else {
      trace::MemsetRec m{};
      m.op = c;
      m.op.flags |= trace::kOpAsync;
      m.bytes = g.bytes, m.value = g.value, m.element_size = 0;  // CUPTI does not say
      w_.add(m, trace::RecType::Memset);
    }
  }
  op.graph_nodes.clear();
}

void OpResolver::release_events(PendingOp& op) {
  if (recycle_) recycle_(op.owner, op.ctx, op.ev_start, op.ev_end);
  op.ev_start = op.ev_end = nullptr;
}

void OpResolver::abandon(CUcontext ctx, bool at_exit) {
  for (Stream* s : streams_) {
    if (ctx && s->ctx != ctx) continue;
    for (PendingOp& op : s->q) {
      // A CUPTI op whose record is here keeps it (it may wait behind one whose record never
      // came); anything else is written without GPU time (its context's events may be gone).
      if (op.cupti && resolve(op)) {
        finalize(*s, op);
      } else {
        const bool pending = at_exit && (op.timed || op.cupti);
        pending_exit_ += pending;
        write(*s, op, 0, 0, uint16_t(trace::kOpNoGpuTime | (pending ? trace::kOpPendingExit : 0)));
      }
      --pending_;
    }
    s->q.clear();
    s->unconfirmed.clear();  // its context is gone (or the process ends): nothing more to wait for
  }
}

}  // namespace cutrace
