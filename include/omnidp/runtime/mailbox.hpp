#pragma once
// An in-process mailbox between the actors of one rank (comm thread, coordinator, worker,
// writer): an unbounded multi-producer multi-consumer FIFO guarded by a mutex and a condition
// variable. close() wakes every waiter; after it push() is refused and pop() returns what is
// left, then nullopt. Thread-safe.

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

namespace omnidp::runtime {

template <class T>
class Mailbox {
 public:
  Mailbox() = default;
  Mailbox(const Mailbox&) = delete;
  Mailbox& operator=(const Mailbox&) = delete;

  // Returns false (and drops the item) once the mailbox is closed.
  bool push(T item) {
    {
      std::lock_guard lock(mutex_);
      if (closed_) return false;
      items_.push_back(std::move(item));
    }
    ready_.notify_one();
    return true;
  }

  // Blocks until an item arrives or the mailbox is closed and empty (nullopt).
  [[nodiscard]] std::optional<T> pop() {
    std::unique_lock lock(mutex_);
    ready_.wait(lock, [&] { return !items_.empty() || closed_; });
    return take_locked();
  }

  // Like pop(), but gives up after `timeout` (nullopt).
  template <class Rep, class Period>
  [[nodiscard]] std::optional<T> pop_for(std::chrono::duration<Rep, Period> timeout) {
    std::unique_lock lock(mutex_);
    ready_.wait_for(lock, timeout, [&] { return !items_.empty() || closed_; });
    return take_locked();
  }

  // Never blocks.
  [[nodiscard]] std::optional<T> try_pop() {
    std::lock_guard lock(mutex_);
    return take_locked();
  }

  // Removes and returns every queued item (e.g. prefetched work given back on a drain).
  [[nodiscard]] std::vector<T> take_all() {
    std::lock_guard lock(mutex_);
    std::vector<T> out;
    out.reserve(items_.size());
    for (auto& item : items_) out.push_back(std::move(item));
    items_.clear();
    return out;
  }

  void close() {
    {
      std::lock_guard lock(mutex_);
      closed_ = true;
    }
    ready_.notify_all();
  }

  [[nodiscard]] bool closed() const {
    std::lock_guard lock(mutex_);
    return closed_;
  }
  [[nodiscard]] std::size_t size() const {
    std::lock_guard lock(mutex_);
    return items_.size();
  }

 private:
  std::optional<T> take_locked() {
    if (items_.empty()) return std::nullopt;
    T item = std::move(items_.front());
    items_.pop_front();
    return item;
  }

  mutable std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<T> items_;
  bool closed_ = false;
};

}  // namespace omnidp::runtime
