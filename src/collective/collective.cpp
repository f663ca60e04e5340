#include "omnidp/collective/collective.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <condition_variable>
#include <cstring>
#include <mutex>

#include "omnidp/common/error.hpp"

namespace omnidp {

std::size_t element_size(ElementType type) noexcept {
  switch (type) {
    case ElementType::u8: return 1;
    case ElementType::f16:
    case ElementType::bf16: return 2;
    case ElementType::i32:
    case ElementType::f32: return 4;
    case ElementType::i64:
    case ElementType::f64: return 8;
  }
  return 1;
}

const char* to_string(ElementType type) noexcept {
  switch (type) {
    case ElementType::u8: return "u8";
    case ElementType::i32: return "i32";
    case ElementType::i64: return "i64";
    case ElementType::f16: return "f16";
    case ElementType::bf16: return "bf16";
    case ElementType::f32: return "f32";
    case ElementType::f64: return "f64";
  }
  return "?";
}

std::string Collective::where(const char* collective) const {
  return fmt::format("{} on {}, group rank {} of {} ({})", collective, group_name(), rank(), size(),
                     backend());
}

void Collective::fail(const char* collective, const std::string& what) const {
  throw RuntimeError(where(collective) + ": " + what);
}

void Collective::check_sum_type(ElementType type) const {
  if (type == ElementType::f16 || type == ElementType::bf16 || type == ElementType::u8) {
    fail("all_reduce_sum", std::string("the ") + backend() + " backend does not sum " +
                               to_string(type) + " elements (sum them as f32)");
  }
}

void Collective::check_root(const char* collective, int root) const {
  if (root < 0 || root >= size()) {
    fail(collective, fmt::format("root {} is not a rank of the group", root));
  }
}

std::string axis_group_name(const std::string& group_name, const char* axis,
                            const std::vector<int>& world_ranks) {
  return fmt::format("{}, {} axis (world ranks {})", group_name, axis, fmt::join(world_ranks, ","));
}

namespace {

// The state the threads of one in-process group share: a reusable barrier and one published
// buffer per rank.
struct InProcessGroup {
  explicit InProcessGroup(int n)
      : size(n), slots(static_cast<std::size_t>(n), nullptr), bytes(static_cast<std::size_t>(n), 0) {}
  void barrier() {
    std::unique_lock lock(mutex);
    const std::uint64_t gen = generation;
    if (++arrived == size) {
      arrived = 0;
      ++generation;
      cv.notify_all();
    } else {
      cv.wait(lock, [&] { return generation != gen; });
    }
  }
  int size;
  std::mutex mutex;
  std::condition_variable cv;
  int arrived = 0;
  std::uint64_t generation = 0;
  std::vector<const void*> slots;
  std::vector<std::size_t> bytes;  // what each rank published (they must agree)
};

template <typename T>
void add_into(void* out, const void* in, std::size_t count) {
  auto* o = static_cast<T*>(out);
  const auto* x = static_cast<const T*>(in);
  for (std::size_t i = 0; i < count; ++i) o[i] += x[i];
}

class InProcessCollective final : public Collective {
 public:
  InProcessCollective(std::shared_ptr<InProcessGroup> group, int rank, std::string name)
      : group_(std::move(group)), rank_(rank), name_(std::move(name)) {}

  int rank() const noexcept override { return rank_; }
  int size() const noexcept override { return group_->size; }
  const std::string& group_name() const noexcept override { return name_; }
  const char* backend() const noexcept override { return "in-process"; }
  bool takes_device_memory() const noexcept override { return false; }

  void all_gather(const void* send, void* recv, std::size_t count, ElementType type) override {
    const std::size_t bytes = count * element_size(type);
    exchange("all_gather", send, bytes, [&] {
      for (int r = 0; r < size(); ++r) {
        std::memcpy(static_cast<char*>(recv) + static_cast<std::size_t>(r) * bytes, slot(r), bytes);
      }
    });
  }
  void all_to_all(const void* send, void* recv, std::size_t count, ElementType type) override {
    const std::size_t bytes = count * element_size(type);
    exchange("all_to_all", send, bytes, [&] {
      for (int r = 0; r < size(); ++r) {
        std::memcpy(static_cast<char*>(recv) + static_cast<std::size_t>(r) * bytes,
                    static_cast<const char*>(slot(r)) + static_cast<std::size_t>(rank_) * bytes,
                    bytes);
      }
    });
  }
  void all_reduce_sum(void* data, std::size_t count, ElementType type) override {
    check_sum_type(type);
    const std::size_t bytes = count * element_size(type);
    const std::vector<char> mine(static_cast<const char*>(data),
                                 static_cast<const char*>(data) + bytes);
    exchange("all_reduce_sum", mine.data(), bytes, [&] {
      // Every rank adds in rank order, so all get the same bits.
      std::memcpy(data, slot(0), bytes);
      for (int r = 1; r < size(); ++r) {
        switch (type) {
          case ElementType::i32: add_into<std::int32_t>(data, slot(r), count); break;
          case ElementType::i64: add_into<std::int64_t>(data, slot(r), count); break;
          case ElementType::f32: add_into<float>(data, slot(r), count); break;
          case ElementType::f64: add_into<double>(data, slot(r), count); break;
          default: break;
        }
      }
    });
  }
  void broadcast(void* data, std::size_t count, ElementType type, int root) override {
    check_root("broadcast", root);
    const std::size_t bytes = count * element_size(type);
    exchange("broadcast", data, bytes, [&] {
      if (rank_ != root) std::memcpy(data, slot(root), bytes);
    });
  }

 private:
  [[nodiscard]] const void* slot(int r) const { return group_->slots[static_cast<std::size_t>(r)]; }
  // Publishes `mine`, waits for every rank, runs `read`, and waits again so that no rank
  // changes its buffer while another still reads it. Ranks that published different sizes
  // (calls that do not match) all throw instead of reading.
  template <typename F>
  void exchange(const char* collective, const void* mine, std::size_t bytes, F&& read) {
    group_->slots[static_cast<std::size_t>(rank_)] = mine;
    group_->bytes[static_cast<std::size_t>(rank_)] = bytes;
    group_->barrier();
    bool same = true;
    for (const auto b : group_->bytes) same = same && b == bytes;
    if (same) read();
    group_->barrier();
    if (!same) fail(collective, "the ranks of the group passed different sizes");
  }

  std::shared_ptr<InProcessGroup> group_;
  int rank_;
  std::string name_;
};

}  // namespace

std::vector<std::unique_ptr<Collective>> make_in_process_collectives(int size,
                                                                     const std::string& group_name) {
  if (size < 1) throw RuntimeError("an in-process group needs at least one rank");
  auto group = std::make_shared<InProcessGroup>(size);
  std::vector<std::unique_ptr<Collective>> out;
  for (int r = 0; r < size; ++r)
    out.push_back(std::make_unique<InProcessCollective>(group, r, group_name));
  return out;
}

}  // namespace omnidp
