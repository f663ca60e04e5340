#pragma once
// Which request a replica runs next (docs/scheduling.md). The coordinator asks
// next_for(replica) whenever a replica has a free slot (1 running + scheduler.prefetch queued);
// the queue pulls requests from a streaming RequestSource as it needs them:
//  - round_robin: request i goes to replica i % R (i = Request::index, its position in the
//    manifest), statically. Requests read ahead for other replicas wait in per-replica FIFOs.
//  - dynamic + manifest: idle replicas pull in manifest order; one request is read at a time,
//    so memory stays constant for any manifest size.
//  - dynamic + cost_desc: the most expensive request among the next `scheduler.lookahead`
//    pending ones is served first (longest-processing-time first within a bounded window;
//    exact LPT when the manifest fits the window). Memory: at most `lookahead` requests.
// Retries (transient failures) are served before new work, to another replica than the one
// that failed when there is more than one. With LoRA adapters on manifest lines (Request::lora),
// dynamic + cost_desc keeps each replica on its adapter set: a replica gets the most expensive
// request of the set it holds while the window has one, and switches sets only when none is
// left (a switch costs a fuse pass over the weights; docs/scheduling.md). Not thread-safe
// (coordinator thread).

#include <cstddef>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "omnidp/config/config.hpp"
#include "omnidp/manifest/request.hpp"
#include "omnidp/runtime/cost_model.hpp"

namespace omnidp::runtime {

// A stream of requests (the manifest reader, or a vector in tests). Rank 0 only.
class RequestSource {
 public:
  virtual ~RequestSource() = default;
  RequestSource() = default;
  RequestSource(const RequestSource&) = delete;
  RequestSource& operator=(const RequestSource&) = delete;
  // The next request, or nullopt at the end.
  [[nodiscard]] virtual std::optional<Request> next() = 0;
};

class VectorSource final : public RequestSource {
 public:
  explicit VectorSource(std::vector<Request> requests) : requests_(std::move(requests)) {}
  std::optional<Request> next() override {
    if (pos_ >= requests_.size()) return std::nullopt;
    return requests_[pos_++];
  }

 private:
  std::vector<Request> requests_;
  std::size_t pos_ = 0;
};

struct WorkItem {
  Request request;
  int attempt = 1;         // 1-based
  int avoid_replica = -1;  // the replica whose transient failure caused this retry
  CostFeatures features;
  double key = 0.0;         // cost_desc ordering key (estimated cost)
  bool handed_out = false;  // assigned once already (a retry or a returned request)
  std::string adapters;     // the request's adapter set (describe_lora), "" for none
};

class WorkQueue {
 public:
  // `cost` must outlive the queue; rekey() after it is recalibrated.
  WorkQueue(const SchedulerConfig& config, int replicas, RequestSource& source,
            const CostModel& cost);

  // The next request for `replica`, or nullopt when none is available to it now (the
  // source is exhausted, or round_robin has nothing left for this replica).
  [[nodiscard]] std::optional<WorkItem> next_for(int replica);
  // Queues a retry of a transiently failed request (attempt already incremented).
  void retry(WorkItem item, int failed_replica);
  // Returns an item next_for() gave out but that was not handed to a replica (the deadline
  // gate, the drain_after cap): the next next_for() that could have returned it returns it.
  void put_back(WorkItem item);
  // Recomputes ordering keys after the cost model changed.
  void rekey();
  // True when the source is at its end and nothing is buffered or waiting for a retry.
  [[nodiscard]] bool exhausted() const;
  [[nodiscard]] std::size_t buffered() const;  // requests read but not handed out
  [[nodiscard]] std::size_t peak_buffered() const noexcept { return peak_; }
  [[nodiscard]] std::size_t retries() const noexcept { return retries_.size(); }

 private:
  bool read_one();  // appends one request from the source to the right buffer
  void note_peak();
  [[nodiscard]] WorkItem make_item(Request request) const;

  SchedulerConfig config_;
  int replicas_;
  RequestSource& source_;
  const CostModel& cost_;
  bool source_done_ = false;
  std::deque<WorkItem> retries_;
  std::deque<WorkItem> fifo_;                      // dynamic + manifest
  std::vector<WorkItem> heap_;                     // dynamic + cost_desc (max-heap on key)
  std::vector<std::deque<WorkItem>> per_replica_;  // round_robin
  std::vector<std::string> replica_adapters_;      // the adapter set each replica last got
  bool any_adapters_ = false;                      // a request with adapters was read
  std::size_t peak_ = 0;
};

}  // namespace omnidp::runtime
