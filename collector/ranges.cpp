#include "collector/ranges.h"

namespace cutrace {

OpenRange* RangeTracker::open(uint32_t tid, int64_t ts, const Attrs& a, trace::RangeKind kind, uint64_t id) {
  auto* r = new OpenRange();
  trace::RangeRec& x = r->rec;
  x = trace::RangeRec{};
  x.h = {uint16_t(trace::RecType::Range), uint16_t(sizeof x)};
  x.cpu_begin = ts, x.id = id, x.tid = tid, x.name_id = a.name_id, x.domain_id = a.domain_id;
  x.category = a.category, x.color = a.color, x.kind = uint8_t(kind), x.source = a.source;
  r->payload_type = a.payload_type, r->payload = a.payload;
  return r;
}

void RangeTracker::push(uint32_t tid, int64_t ts, const Attrs& a, uint32_t level) {
  std::vector<DomainStack>& stacks = stacks_[tid];
  DomainStack* st = nullptr;
  for (DomainStack& d : stacks)
    if (d.domain_id == a.domain_id) st = &d;
  if (!st) st = &stacks.emplace_back(DomainStack{a.domain_id, {}});
  OpenRange* r = open(tid, ts, a, trace::RangeKind::PushPop, next_id_++);
  r->rec.depth = uint16_t(level > 0xFFFF ? 0xFFFF : level);
  r->level = level;
  st->open.push_back(r);
}

void RangeTracker::pop(uint32_t tid, uint32_t domain_id, int64_t ts, uint32_t level) {
  auto it = stacks_.find(tid);
  if (it == stacks_.end()) return;
  for (DomainStack& d : it->second) {
    if (d.domain_id != domain_id) continue;
    // Ranges deeper than the pop lost their own pops (not captured): they end open here.
    while (!d.open.empty() && d.open.back()->level > level) {
      close_open(d.open.back(), ts);
      d.open.pop_back();
    }
    // A shallower top: this pop's push was not captured (capture began inside it).
    if (d.open.empty() || d.open.back()->level != level) return;
    OpenRange* r = d.open.back();
    d.open.pop_back();
    close(r, tid, ts);
    return;
  }
}

void RangeTracker::start(uint64_t id, uint32_t tid, int64_t ts, const Attrs& a) {
  started_[id] = open(tid, ts, a, trace::RangeKind::StartEnd, id);
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

void RangeTracker::close_open(OpenRange* r, int64_t end_ts) {
  r->rec.cpu_end = end_ts > r->rec.cpu_begin ? end_ts : r->rec.cpu_begin;
  r->rec.kind |= trace::kRangeOpen;
  r->closed = true;
  maybe_write(r);
}

void RangeTracker::attach(uint32_t tid, std::vector<OpenRange*>* out) {
  auto it = stacks_.find(tid);
  if (it != stacks_.end())
    for (DomainStack& d : it->second)
      for (OpenRange* r : d.open) out->push_back(r);
  for (auto& [id, r] : started_) out->push_back(r);
  for (OpenRange* r : *out) {
    ++r->pending;
    ++r->rec.gpu_ops;
  }
}

void RangeTracker::op_done(const std::vector<OpenRange*>& ranges, int64_t gpu_start, int64_t gpu_end) {
  for (OpenRange* r : ranges) {
    trace::RangeRec& x = r->rec;
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
  if (r->payload_type) {  // directly before its range (trace::PayloadRec)
    trace::PayloadRec p{};
    p.target = r->rec.id, p.ts = r->rec.cpu_begin, p.tid = r->rec.tid, p.of = uint16_t(trace::RecType::Range);
    p.type = r->payload_type, p.bits = r->payload;
    w_.add(p, trace::RecType::Payload);
  }
  w_.append(&r->rec);
  delete r;
}

std::vector<uint32_t> RangeTracker::open_on(uint32_t tid) const {
  std::vector<uint32_t> out;
  auto it = stacks_.find(tid);
  if (it != stacks_.end())
    for (const DomainStack& d : it->second)
      for (const OpenRange* r : d.open) out.push_back(r->rec.name_id);
  for (const auto& [id, r] : started_)
    if (r->rec.tid == tid) out.push_back(r->rec.name_id);
  return out;
}

void RangeTracker::finish(int64_t end_ts) {
  for (auto& [tid, stacks] : stacks_)
    for (DomainStack& d : stacks)
      for (OpenRange* r : d.open) close_open(r, end_ts);
  stacks_.clear();
  for (auto& [id, r] : started_) close_open(r, end_ts);
  started_.clear();
}

}  // namespace cutrace
