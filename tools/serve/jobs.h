// What `cutrace serve` keeps between requests: the job scanner and the jobs loaded so far (their
// dashboard document and recent timeline pieces), at most `max_loaded` of them, least recently
// used dropped first. Every answer is a JSON document (nlohmann-json: strings escaped, invalid
// UTF-8 replaced), so names from the profiled program never reach a page unescaped.
#pragma once
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>

#include "tools/report/data.h"
#include "tools/report/tracks.h"
#include "tools/serve/job_dir.h"

namespace cutrace::serve {

// An answer: HTTP status and JSON body.
struct Reply {
  int status = 200;
  std::string body;
};

Reply error_reply(int status, const std::string& message);  // {"error": message}

class JobCache {
 public:
  explicit JobCache(jobs::Scanner* scanner, size_t max_loaded = 4) : scanner_(scanner), max_loaded_(max_loaded) {}

  Reply list(const jobs::Filter& f);                                      // {"root", "jobs": [...]}
  Reply load(const std::string& id);                                      // loads; {"id", "loaded": true, ...}
  Reply unload(const std::string& id);                                    // frees; {"id", "loaded": false}
  Reply dashboard(const std::string& id);                                 // report::dashboard_json (loads)
  Reply timeline(const std::string& id, const report::TimelineQuery& q);  // one piece
  // `cutrace diff` of two jobs (its --json document, docs/DIFF.md), A then B; not cached.
  Reply compare(const std::string& id_a, const std::string& id_b);
  size_t loaded_count();
  bool exists(const std::string& id) {
    jobs::Job j;
    return scanner_->find(id, &j);
  }

  static constexpr size_t kMaxPieces = 64;  // timeline pieces kept per loaded job

 private:
  struct Loaded {
    jobs::Job job;
    std::string dashboard;
    report::TimelineIndex index;  // built with the dashboard: a piece decodes only its blocks
    std::map<std::tuple<int64_t, int64_t, int>, std::string> pieces;
    std::list<std::tuple<int64_t, int64_t, int>> piece_order;  // oldest first
    uint64_t last_used = 0;
  };
  // The loaded job `id`, loading (or reloading, when its files changed) as needed.
  std::shared_ptr<Loaded> get(const std::string& id, Reply* err);
  void evict_locked();

  jobs::Scanner* scanner_;
  size_t max_loaded_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<Loaded>> loaded_;
  uint64_t clock_ = 0;
};

// Strict parsers for query parameters: whole string, in range.
bool parse_int64(const std::string& s, int64_t* out);

}  // namespace cutrace::serve
