#include "omnidp/runtime/transport.hpp"

#include <fmt/format.h>

namespace omnidp::runtime {

void send_message(Transport& transport, int dest, const Message& message, int tag) {
  transport.send(dest, tag, encode(message));
}

std::optional<Envelope> poll_message(Transport& transport) {
  auto packet = transport.poll();
  if (!packet) return std::nullopt;
  try {
    return Envelope{packet->source, decode(packet->bytes)};
  } catch (const Error& e) {
    throw RuntimeError(e.message(), {fmt::format("rank {}", transport.rank()),
                                     fmt::format("message from rank {}", packet->source)});
  }
}

JobAborted::JobAborted(int exit_code, const std::string& why)
    : RuntimeError(why, {fmt::format("job aborted with exit code {}", exit_code)}),
      exit_code_(exit_code) {}

class InProcessNetwork::Endpoint final : public Transport {
 public:
  Endpoint(InProcessNetwork& net, int rank) : net_(net), rank_(rank) {}
  int rank() const noexcept override { return rank_; }
  int size() const noexcept override { return net_.size_; }
  void send(int dest, int tag, std::vector<std::uint8_t> bytes) override {
    net_.post(rank_, dest, tag, std::move(bytes));
  }
  std::optional<Packet> poll() override { return net_.take(rank_); }
  void flush() override { net_.check_aborted(); }
  [[noreturn]] void abort_job(int exit_code, const std::string& why) override {
    {
      std::lock_guard lock(net_.mutex_);
      if (!net_.aborted_) {
        net_.aborted_ = true;
        net_.abort_code_ = exit_code;
        net_.abort_why_ = why;
      }
    }
    throw JobAborted(exit_code, why);
  }

 private:
  InProcessNetwork& net_;
  int rank_;
};

InProcessNetwork::InProcessNetwork(int size, Delivery delivery)
    : size_(size), delivery_(delivery), inboxes_(static_cast<std::size_t>(size)) {
  if (size < 1) throw RuntimeError("in-process network needs at least one rank");
  for (int r = 0; r < size; ++r) endpoints_.push_back(std::make_unique<Endpoint>(*this, r));
}

InProcessNetwork::~InProcessNetwork() = default;

Transport& InProcessNetwork::endpoint(int rank) {
  if (rank < 0 || rank >= size_) {
    throw RuntimeError(fmt::format("no simulated rank {} in a network of {}", rank, size_));
  }
  return *endpoints_[static_cast<std::size_t>(rank)];
}

void InProcessNetwork::check_aborted() const {
  std::lock_guard lock(mutex_);
  if (aborted_) throw JobAborted(abort_code_, abort_why_);
}

void InProcessNetwork::post(int from, int to, int tag, std::vector<std::uint8_t> bytes) {
  if (to < 0 || to >= size_) {
    throw RuntimeError(fmt::format("send to rank {} outside the world of {}", to, size_),
                       {fmt::format("rank {}", from)});
  }
  std::lock_guard lock(mutex_);
  if (aborted_) throw JobAborted(abort_code_, abort_why_);
  if (delivery_ == Delivery::immediate) {
    inboxes_[static_cast<std::size_t>(to)].push_back(Packet{from, tag, std::move(bytes)});
  } else {
    in_flight_.push_back(InFlight{from, to, tag, std::move(bytes)});
  }
}

std::optional<Packet> InProcessNetwork::take(int rank) {
  std::lock_guard lock(mutex_);
  if (aborted_) throw JobAborted(abort_code_, abort_why_);
  auto& inbox = inboxes_[static_cast<std::size_t>(rank)];
  if (inbox.empty()) return std::nullopt;
  Packet p = std::move(inbox.front());
  inbox.pop_front();
  return p;
}

std::vector<InProcessNetwork::InFlight> InProcessNetwork::in_flight() const {
  std::lock_guard lock(mutex_);
  return {in_flight_.begin(), in_flight_.end()};
}

bool InProcessNetwork::deliver_next() {
  std::lock_guard lock(mutex_);
  if (in_flight_.empty()) return false;
  InFlight m = std::move(in_flight_.front());
  in_flight_.pop_front();
  inboxes_[static_cast<std::size_t>(m.to)].push_back(Packet{m.from, m.tag, std::move(m.bytes)});
  return true;
}

std::size_t InProcessNetwork::deliver_all() {
  std::size_t n = 0;
  while (deliver_next()) ++n;
  return n;
}

}  // namespace omnidp::runtime
