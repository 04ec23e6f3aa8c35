// Fake CUPTI: cuptiActivityFlushAll, the delivery of closed buffers to the client (fake_cupti.h:
// the model; cupti_activity.h documents the real function's flags).
#include <vector>

#include "test/fake_cupti/fake_cupti.h"

FAKE_CUPTI_API CUptiResult cuptiActivityFlushAll(uint32_t flag) {
  fake_cupti::Activity& a = fake_cupti::activity();
  std::vector<fake_cupti::Buffer> deliver;
  CUpti_BuffersCallbackCompleteFunc completed;
  {
    std::lock_guard<std::mutex> lock(a.mu);
    if (a.completed == nullptr) return CUPTI_ERROR_INVALID_OPERATION;  // no cuptiActivityRegisterCallbacks
    completed = a.completed;
    if (!a.filling.records.empty()) {  // a flush closes the buffer being filled
      a.closed.push_back(std::move(a.filling));
      a.filling = fake_cupti::Buffer{};
    }
    bool forced = (flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) != 0;
    int64_t now = fake_cupti::nowNs();
    while (!a.closed.empty()) {
      fake_cupti::Buffer& b = a.closed.front();
      bool complete = true;
      for (const fake_cupti::PendingRecord& r : b.records) complete = complete && r.endNs <= now;
      if (!complete && !forced) break;  // delivered in order: a buffer in flight holds back the rest
      fake_cupti::stampRecords(a, b, now);
      deliver.push_back(std::move(b));
      a.closed.pop_front();
    }
  }
  for (fake_cupti::Buffer& b : deliver) completed(nullptr, 0, b.data, b.size, b.used);
  return CUPTI_SUCCESS;
}
