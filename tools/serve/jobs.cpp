#include "tools/serve/jobs.h"

#include <malloc.h>
#include <cerrno>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "tools/analysis/diff.h"

namespace cutrace::serve {
namespace {

using nlohmann::json;

std::string dump(const json& j) {
  // Invalid UTF-8 in a name (the profiled program's bytes) becomes U+FFFD instead of throwing.
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

json job_json(const jobs::Job& j, bool loaded) {
  return json{{"id", j.id},
              {"name", j.name},
              {"created_ns", j.created_ns},
              {"status", jobs::status_name(j.status)},
              {"reason", j.reason},
              {"ranks", j.ranks},
              {"size_bytes", j.size_bytes},
              {"hosts", j.hosts},
              {"problems", j.problems},
              {"notes", j.notes},
              {"loaded", loaded}};
}

}  // namespace

Reply error_reply(int status, const std::string& message) { return Reply{status, dump(json{{"error", message}})}; }

bool parse_int64(const std::string& s, int64_t* out) {
  if (s.empty() || s.size() > 20) return false;
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno != 0 || end != s.c_str() + s.size()) return false;
  *out = v;
  return true;
}

Reply JobCache::list(const jobs::Filter& f) {
  std::vector<jobs::Job> all = scanner_->scan();
  json arr = json::array();
  std::lock_guard<std::mutex> lock(mu_);
  for (const jobs::Job& j : all) {
    if (f.matches(j)) arr.push_back(job_json(j, loaded_.count(j.id) != 0));
  }
  return Reply{200, dump(json{{"root", scanner_->root()}, {"total", all.size()}, {"jobs", arr}})};
}

void JobCache::evict_locked() {
  while (loaded_.size() > max_loaded_) {
    auto oldest = loaded_.begin();
    for (auto it = loaded_.begin(); it != loaded_.end(); ++it) {
      if (it->second->last_used < oldest->second->last_used) oldest = it;
    }
    loaded_.erase(oldest);
  }
}

std::shared_ptr<JobCache::Loaded> JobCache::get(const std::string& id, Reply* err) {
  jobs::Job job;
  if (!scanner_->find(id, &job)) {
    *err = error_reply(404, "no such job");
    return nullptr;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = loaded_.find(id);
    // Same files, same sizes: still valid. A running job that grew is read again.
    if (it != loaded_.end() && it->second->job.size_bytes == job.size_bytes && it->second->job.ranks == job.ranks) {
      it->second->last_used = ++clock_;
      return it->second;
    }
  }
  auto l = std::make_shared<Loaded>();
  std::string why;
  if (!report::dashboard_json(job.path, &l->dashboard, &why, &l->index)) {
    *err = error_reply(422, "cannot read job " + job.name + ": " + why);
    return nullptr;
  }
  l->job = std::move(job);
  std::lock_guard<std::mutex> lock(mu_);
  l->last_used = ++clock_;
  loaded_[id] = l;
  evict_locked();
  return l;
}

Reply JobCache::load(const std::string& id) {
  Reply err;
  std::shared_ptr<Loaded> l = get(id, &err);
  if (!l) return err;
  return Reply{200, dump(json{{"loaded", true}, {"job", job_json(l->job, true)}})};
}

Reply JobCache::unload(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  bool was = loaded_.erase(id) != 0;
  return Reply{200, dump(json{{"id", id}, {"loaded", false}, {"was_loaded", was}})};
}

Reply JobCache::dashboard(const std::string& id) {
  Reply err;
  std::shared_ptr<Loaded> l = get(id, &err);
  return l ? Reply{200, l->dashboard} : err;
}

Reply JobCache::timeline(const std::string& id, const report::TimelineQuery& q) {
  Reply err;
  std::shared_ptr<Loaded> l = get(id, &err);
  if (!l) return err;
  auto key = std::make_tuple(q.t0_ns, q.t1_ns, q.width_px);
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = l->pieces.find(key);
    if (it != l->pieces.end()) return Reply{200, it->second};
  }
  std::string out, why;
  bool ok = report::timeline_json(l->index, q, &out, &why);
  // The piece's read windows (MiBs each) were freed into this worker thread's malloc arena,
  // which glibc keeps: without a trim the server grows by them with every piece.
  malloc_trim(0);
  if (!ok) return error_reply(422, "cannot read the timeline of " + l->job.name + ": " + why);
  std::lock_guard<std::mutex> lock(mu_);
  if (l->pieces.emplace(key, out).second) {
    l->piece_order.push_back(key);
    if (l->piece_order.size() > kMaxPieces) {
      l->pieces.erase(l->piece_order.front());
      l->piece_order.pop_front();
    }
  }
  return Reply{200, out};
}

Reply JobCache::compare(const std::string& id_a, const std::string& id_b) {
  jobs::Job a, b;
  if (!scanner_->find(id_a, &a) || !scanner_->find(id_b, &b)) return error_reply(404, "no such job");
  SummaryOptions opt;
  DiffSide sa = load_diff_side(a.path, opt, std::nullopt), sb = load_diff_side(b.path, opt, std::nullopt);
  for (const auto* s : {&sa, &sb}) {
    if (!s->ok) {
      std::string why = s->note.empty() ? "no trace of it reads" : s->note;
      if (!s->errors.empty()) why += ": " + s->errors.front();
      return error_reply(422, "cannot compare " + (s == &sa ? a.name : b.name) + ": " + why);
    }
  }
  Diff d = cutrace::compare(*sa.model, *sb.model);
  // The page names the jobs as the list does, not by their paths on the server.
  sa.path = a.name, sb.path = b.name;
  return Reply{200, diff_json(d, sa, sb).dump(-1, ' ', false, json::error_handler_t::replace)};
}

size_t JobCache::loaded_count() {
  std::lock_guard<std::mutex> lock(mu_);
  return loaded_.size();
}

}  // namespace cutrace::serve
