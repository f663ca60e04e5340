#include "omnidp/runtime/scheduler.hpp"

#include <algorithm>

#include "omnidp/config/lora.hpp"

#include "omnidp/common/error.hpp"

namespace omnidp::runtime {
namespace {
// Max-heap on key; ties: the earlier manifest position first (a stable, deterministic order).
bool heap_less(const WorkItem& a, const WorkItem& b) {
  if (a.key != b.key) return a.key < b.key;
  return a.request.index > b.request.index;
}
}  // namespace

WorkQueue::WorkQueue(const SchedulerConfig& config, int replicas, RequestSource& source,
                     const CostModel& cost)
    : config_(config), replicas_(replicas), source_(source), cost_(cost) {
  if (replicas < 1) throw RuntimeError("work queue needs at least one replica");
  if (config_.policy == SchedulerPolicy::round_robin) {
    per_replica_.resize(static_cast<std::size_t>(replicas));
  }
  if (config_.lookahead < 1) config_.lookahead = 1;
  replica_adapters_.resize(static_cast<std::size_t>(replicas));
}

WorkItem WorkQueue::make_item(Request request) const {
  WorkItem item;
  item.features = cost_.features(request);
  item.key = cost_.estimate(item.features);
  item.attempt = request.prior_attempts + 1;  // attempts continue across runs (AttemptRule)
  item.adapters = describe_lora(request.lora);
  item.request = std::move(request);
  return item;
}

bool WorkQueue::read_one() {
  if (source_done_) return false;
  auto request = source_.next();
  if (!request) {
    source_done_ = true;
    return false;
  }
  WorkItem item = make_item(std::move(*request));
  any_adapters_ = any_adapters_ || !item.adapters.empty();
  if (config_.policy == SchedulerPolicy::round_robin) {
    const auto r = item.request.index % static_cast<std::size_t>(replicas_);
    per_replica_[r].push_back(std::move(item));
  } else if (config_.order == WorkOrder::manifest) {
    fifo_.push_back(std::move(item));
  } else {
    heap_.push_back(std::move(item));
    std::push_heap(heap_.begin(), heap_.end(), heap_less);
  }
  note_peak();
  return true;
}

void WorkQueue::note_peak() { peak_ = std::max(peak_, buffered()); }

std::optional<WorkItem> WorkQueue::next_for(int replica) {
  // Retries first, on another replica when there is one.
  for (auto it = retries_.begin(); it != retries_.end(); ++it) {
    if (replicas_ == 1 || it->avoid_replica != replica) {
      WorkItem item = std::move(*it);
      retries_.erase(it);
      return item;
    }
  }
  if (config_.policy == SchedulerPolicy::round_robin) {
    auto& mine = per_replica_.at(static_cast<std::size_t>(replica));
    while (mine.empty() && read_one()) {
    }
    if (mine.empty()) return std::nullopt;
    WorkItem item = std::move(mine.front());
    mine.pop_front();
    return item;
  }
  if (config_.order == WorkOrder::manifest) {
    if (fifo_.empty()) read_one();
    if (fifo_.empty()) return std::nullopt;
    WorkItem item = std::move(fifo_.front());
    fifo_.pop_front();
    return item;
  }
  while (heap_.size() < config_.lookahead && read_one()) {
  }
  if (heap_.empty()) return std::nullopt;
  auto& held = replica_adapters_.at(static_cast<std::size_t>(replica));
  // The most expensive request of the adapter set this replica holds, when the top is another's.
  auto best = heap_.end();
  if (any_adapters_ && heap_.front().adapters != held) {
    for (auto it = heap_.begin(); it != heap_.end(); ++it) {
      if (it->adapters == held && (best == heap_.end() || heap_less(*best, *it))) best = it;
    }
  }
  WorkItem item;
  if (best == heap_.end()) {
    std::pop_heap(heap_.begin(), heap_.end(), heap_less);
    item = std::move(heap_.back());
    heap_.pop_back();
  } else {
    std::swap(*best, heap_.back());
    item = std::move(heap_.back());
    heap_.pop_back();
    std::make_heap(heap_.begin(), heap_.end(), heap_less);
  }
  held = item.adapters;
  return item;
}

void WorkQueue::retry(WorkItem item, int failed_replica) {
  item.avoid_replica = failed_replica;
  item.key = cost_.estimate(item.features);
  retries_.push_back(std::move(item));
}

void WorkQueue::put_back(WorkItem item) {
  if (item.handed_out) {  // a retry or a returned request: it came from retries_
    retries_.push_front(std::move(item));
  } else if (config_.policy == SchedulerPolicy::round_robin) {
    const auto r = item.request.index % static_cast<std::size_t>(replicas_);
    per_replica_[r].push_front(std::move(item));
  } else if (config_.order == WorkOrder::manifest) {
    fifo_.push_front(std::move(item));
  } else {
    heap_.push_back(std::move(item));
    std::push_heap(heap_.begin(), heap_.end(), heap_less);
  }
}

void WorkQueue::rekey() {
  for (auto& item : heap_) item.key = cost_.estimate(item.features);
  std::make_heap(heap_.begin(), heap_.end(), heap_less);
}

bool WorkQueue::exhausted() const { return source_done_ && buffered() == 0 && retries_.empty(); }

std::size_t WorkQueue::buffered() const {
  std::size_t n = fifo_.size() + heap_.size();
  for (const auto& q : per_replica_) n += q.size();
  return n;
}

}  // namespace omnidp::runtime
