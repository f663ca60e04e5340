#pragma once
// Point-to-point transport between the ranks of a job: the only way actors on different ranks
// talk. Two implementations: MpiTransport (runtime/mpi.hpp) and InProcessNetwork below, which
// runs N simulated ranks in one process for tests, either delivering at once or step by step.
//
// Threading: a Transport is used by one thread (the rank's comm thread). InProcessNetwork's
// stepping API (deliver_next, in_flight) may be called from any thread.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "omnidp/runtime/protocol.hpp"

namespace omnidp::runtime {

struct Packet {
  int source = 0;
  int tag = 0;
  std::vector<std::uint8_t> bytes;
};

class Transport {
 public:
  virtual ~Transport() = default;
  Transport() = default;
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  [[nodiscard]] virtual int rank() const noexcept = 0;
  [[nodiscard]] virtual int size() const noexcept = 0;
  // Starts sending and returns at once; the transport owns the bytes until they are sent.
  // Messages from one rank to another arrive in the order they were sent.
  virtual void send(int dest, int tag, std::vector<std::uint8_t> bytes) = 0;
  // The next message that has arrived (any source, any tag), or nullopt; never blocks.
  [[nodiscard]] virtual std::optional<Packet> poll() = 0;
  // Blocks until every send started here has completed.
  virtual void flush() = 0;
  // Ends the whole job at once on every rank (MPI_Abort); never returns.
  [[noreturn]] virtual void abort_job(int exit_code, const std::string& why) = 0;
};

void send_message(Transport& transport, int dest, const Message& message, int tag = kProtocolTag);
// Polls one packet and decodes it (RuntimeError naming the source on a bad message).
[[nodiscard]] std::optional<Envelope> poll_message(Transport& transport);

// Thrown by every endpoint of an InProcessNetwork once one of them called abort_job().
class JobAborted : public RuntimeError {
 public:
  JobAborted(int exit_code, const std::string& why);
  [[nodiscard]] int exit_code() const noexcept { return exit_code_; }

 private:
  int exit_code_;
};

enum class Delivery {
  immediate,  // a send lands in the destination's inbox at once
  manual      // a send waits in flight until deliver_next() (deterministic stepping)
};

class InProcessNetwork {
 public:
  explicit InProcessNetwork(int size, Delivery delivery = Delivery::immediate);
  ~InProcessNetwork();
  InProcessNetwork(const InProcessNetwork&) = delete;
  InProcessNetwork& operator=(const InProcessNetwork&) = delete;

  // The transport of simulated rank `rank`; owned by the network.
  [[nodiscard]] Transport& endpoint(int rank);
  [[nodiscard]] int size() const noexcept { return size_; }

  struct InFlight {
    int from = 0;
    int to = 0;
    int tag = 0;
    std::vector<std::uint8_t> bytes;
  };
  // Manual delivery: messages sent but not delivered, oldest first.
  [[nodiscard]] std::vector<InFlight> in_flight() const;
  // Delivers the oldest in-flight message; false when none is in flight.
  bool deliver_next();
  // Delivers every in-flight message; returns how many.
  std::size_t deliver_all();

 private:
  class Endpoint;
  friend class Endpoint;
  void post(int from, int to, int tag, std::vector<std::uint8_t> bytes);
  std::optional<Packet> take(int rank);
  void check_aborted() const;

  int size_;
  Delivery delivery_;
  mutable std::mutex mutex_;
  std::deque<InFlight> in_flight_;
  std::vector<std::deque<Packet>> inboxes_;
  std::vector<std::unique_ptr<Endpoint>> endpoints_;
  bool aborted_ = false;
  int abort_code_ = 0;
  std::string abort_why_;
};

}  // namespace omnidp::runtime
