#include "collector/ranges.h"

namespace cutrace {

OpenRange* RangeTracker::open(uint32_t tid, int64_t ts, const Attrs& a, fmt::RangeKind kind, uint64_t id) {
  auto* r = new OpenRange();
  fmt::RangeRec& x = r->rec;
  x = fmt::RangeRec{};
  x.h = {uint16_t(fmt::RecType::Range), uint16_t(sizeof x)};
  x.cpu_begin = ts, x.id = id, x.tid = tid, x.name_id = a.name_id, x.domain_id = a.domain_id;
  x.category = a.category, x.color = a.color, x.kind = uint8_t(kind), x.source = a.source;
  return r;
}

void RangeTracker::push(uint32_t tid, int64_t ts, const Attrs& a) {
  std::vector<OpenRange*>& stack = stacks_[tid];
  OpenRange* r = open(tid, ts, a, fmt::RangeKind::PushPop, next_id_++);
  r->rec.depth = uint16_t(stack.size());
  stack.push_back(r);
}

void RangeTracker::pop(uint32_t tid, int64_t ts) {
  auto it = stacks_.find(tid);
  if (it == stacks_.end() || it->second.empty()) return;  // a pop without its push (capture began inside)
  OpenRange* r = it->second.back();
  it->second.pop_back();
  close(r, tid, ts);
}

void RangeTracker::start(uint64_t id, uint32_t tid, int64_t ts, const Attrs& a) {
  started_[id] = open(tid, ts, a, fmt::RangeKind::StartEnd, id);
}

void RangeTracker::end(uint64_t id, uint32_t tid, int64_t ts) {
  auto it = started_.find(id);
  if (it == started_.end()) return;
  OpenRange* r = it->second;
  started_.erase(it);
  close(r, tid, ts);
}

void RangeTracker::close(OpenRange* r, uint32_t tid, int64_t ts) {
  r->rec.cpu_end = ts;
  r->rec.end_tid = tid;
  r->closed = true;
  maybe_write(r);
}

void RangeTracker::attach(uint32_t tid, std::vector<OpenRange*>* out) {
  auto it = stacks_.find(tid);
  if (it != stacks_.end())
    for (OpenRange* r : it->second) out->push_back(r);
  for (auto& [id, r] : started_) out->push_back(r);
  for (OpenRange* r : *out) {
    ++r->pending;
    ++r->rec.gpu_ops;
  }
}

void RangeTracker::op_done(const std::vector<OpenRange*>& ranges, int64_t gpu_start, int64_t gpu_end) {
  for (OpenRange* r : ranges) {
    fmt::RangeRec& x = r->rec;
    if (gpu_end) {
      if (!x.gpu_start || gpu_start < x.gpu_start) x.gpu_start = gpu_start;
      if (gpu_end > x.gpu_end) x.gpu_end = gpu_end;
    }
    --r->pending;
    maybe_write(r);
  }
}

void RangeTracker::maybe_write(OpenRange* r) {
  if (!r->closed || r->pending) return;
  w_.append(&r->rec);
  delete r;
}

void RangeTracker::finish() {
  for (auto& [tid, stack] : stacks_)
    for (OpenRange* r : stack) {
      r->closed = true;  // cpu_end stays 0: still open when the trace ended
      maybe_write(r);
    }
  stacks_.clear();
  for (auto& [id, r] : started_) {
    r->closed = true;
    maybe_write(r);
  }
  started_.clear();
}

}  // namespace cutrace
