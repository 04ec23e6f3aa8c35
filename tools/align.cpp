#include "tools/align.h"
#include <algorithm>
#include <cmath>
#include <string_view>
#include <unordered_map>
#include "collector/reader.h"
#include "tools/runs.h"

namespace cutrace {
namespace {

int64_t median(std::vector<int64_t> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + long(v.size() / 2), v.end());
  return v[v.size() / 2];
}

// What alignment needs from one trace: its clock pairs and the ends of its NCCL kernels in
// launch order, per kernel name (each communicator runs its collectives in the same order on
// every rank).
struct RankData {
  std::vector<int64_t> real_minus_mono;
  std::unordered_map<std::string, std::vector<std::pair<uint64_t, int64_t>>> nccl;  // name -> (corr, end)
};

bool read_rank(const std::string& file, RankClock* rc, RankData* d, std::vector<runs::Trace>* ids,
               std::string* err) {
  TraceReader r;
  if (!r.open(file, err)) return false;
  runs::Trace id = runs::identify(r);
  rc->host = id.host;
  rc->rank = int(std::max<int64_t>(id.rank, 0));  // as written: a trace without a rank is rank 0
  ids->push_back(std::move(id));
  r.read([&](const Record& rec) {
    switch (rec.type()) {
      case fmt::RecType::ClockSync: {
        const auto& c = rec.as<fmt::ClockSyncRec>();
        d->real_minus_mono.push_back(int64_t(uint64_t(c.realtime_ns) - uint64_t(c.monotonic_ns)));  // any value: no UB
        break;
      }
      case fmt::RecType::Kernel: {
        const auto& k = rec.as<fmt::KernelRec>();
        if (!k.op.gpu_end) break;
        std::string_view name = r.str(k.name_id);
        uint64_t corr = k.op.corr;  // copies: the record is a packed struct
        int64_t end = k.op.gpu_end;
        if (name.substr(0, 4) == "nccl") d->nccl[std::string(name)].push_back({corr, end});
        break;
      }
      default:
        break;
    }
    return true;
  });
  // Launch order: correlation ids grow per thread, so order by cpu time is what matters; the
  // file order of records is resolution order, close to it. Sort by end within each name.
  for (auto& [name, v] : d->nccl) std::sort(v.begin(), v.end(), [](auto& a, auto& b) { return a.second < b.second; });
  return true;
}

}  // namespace

int64_t Alignment::offset_of(const std::string& file) const {
  for (const RankClock& r : ranks)
    if (r.file == file) return r.offset_ns;
  return 0;
}

Alignment align_traces(const std::vector<std::string>& files) {
  Alignment a;
  a.method = "realtime";
  std::vector<RankData> data(files.size());
  std::vector<runs::Trace> ids;
  for (size_t i = 0; i < files.size(); ++i) {
    RankClock rc;
    rc.file = files[i];
    std::string err;
    if (read_rank(files[i], &rc, &data[i], &ids, &err)) rc.offset_ns = median(data[i].real_minus_mono);
    else a.errors.push_back(err);
    a.ranks.push_back(rc);
  }
  a.mixed_runs = runs::mixed_runs(ids);
  if (files.size() < 2) return a;
  // Refinement: for each rank, the median difference between the reference rank's and its
  // ends of the same collectives (k-th occurrence of a name matches the k-th elsewhere).
  const RankData& ref = data[0];
  std::vector<std::vector<int64_t>> ends_by_match;  // per matched collective, the aligned ends
  for (size_t i = 1; i < files.size(); ++i) {
    std::vector<int64_t> diffs;
    for (const auto& [name, rv] : ref.nccl) {
      auto it = data[i].nccl.find(name);
      if (it == data[i].nccl.end()) continue;
      size_t n = std::min(rv.size(), it->second.size());
      for (size_t k = 0; k < n; ++k)
        diffs.push_back((rv[k].second + a.ranks[0].offset_ns) - (it->second[k].second + a.ranks[i].offset_ns));
    }
    if (diffs.empty()) continue;
    a.ranks[i].refined_ns = median(diffs);
    a.ranks[i].offset_ns += a.ranks[i].refined_ns;
  }
  // Residual: spread of each collective's aligned ends around their mean, over collectives
  // present on every rank.
  std::vector<int64_t> residuals;
  for (const auto& [name, rv] : ref.nccl) {
    size_t n = rv.size();
    for (size_t i = 1; i < files.size(); ++i) {
      auto it = data[i].nccl.find(name);
      n = it == data[i].nccl.end() ? 0 : std::min(n, it->second.size());
    }
    for (size_t k = 0; k < n; ++k) {
      std::vector<int64_t> ends;
      for (size_t i = 0; i < files.size(); ++i)
        ends.push_back((i == 0 ? rv[k].second : data[i].nccl.at(name)[k].second) + a.ranks[i].offset_ns);
      double mean = 0;
      for (int64_t e : ends) mean += double(e) / double(ends.size());
      for (int64_t e : ends) residuals.push_back(int64_t(std::llround(std::fabs(double(e) - mean))));
      ++a.matched;
    }
  }
  if (a.matched) {
    a.method = "realtime+nccl";
    a.residual_median_ns = double(median(residuals));
    a.residual_max_ns = double(*std::max_element(residuals.begin(), residuals.end()));
  }
  return a;
}

}  // namespace cutrace
