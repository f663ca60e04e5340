#pragma once
// MPI, checked in one place. Every MPI call of omni-dp goes through mpi_check(), which turns a
// failure into MpiError("<call>", rank, MPI_Error_string) (MPI_COMM_WORLD is switched to
// MPI_ERRORS_RETURN at initialisation so failures come back as codes). One move-only RAII type
// per MPI handle: MpiEnvironment (init/finalize), Communicator (MPI_Comm), MpiRequest
// (MPI_Request). Only the rank's comm thread may use these; the one exception is a replica
// group's collectives (MpiCollective), on their own communicator, from the worker thread.

#include <mpi.h>

#include <list>
#include <string>
#include <vector>

#include "omnidp/runtime/transport.hpp"

namespace omnidp::runtime {

// Throws MpiError when rc != MPI_SUCCESS. `call` names the call ("MPI_Isend to rank 3").
void mpi_check(int rc, const std::string& call);

// MPI_Init_thread(required) in the constructor, MPI_Finalize in the destructor. If MPI is
// already initialised (a test driver did it), it neither initialises nor finalizes. `required`
// is MPI_THREAD_FUNNELED, or MPI_THREAD_MULTIPLE when replica groups compute (their worker
// threads call the group's collectives, runtime/collective_mpi.hpp); a library that provides
// less is an MpiError.
class MpiEnvironment {
 public:
  explicit MpiEnvironment(int required = MPI_THREAD_FUNNELED);
  ~MpiEnvironment();
  MpiEnvironment(const MpiEnvironment&) = delete;
  MpiEnvironment& operator=(const MpiEnvironment&) = delete;

  [[nodiscard]] int thread_level() const noexcept { return provided_; }
  [[nodiscard]] bool owns() const noexcept { return owns_; }

 private:
  bool owns_ = false;
  int provided_ = 0;
};

// An MPI communicator: MPI_COMM_WORLD borrowed, or one of its splits owned (MPI_Comm_free).
// A null communicator (this rank is in no group) has rank -1 and size 0.
class Communicator {
 public:
  [[nodiscard]] static Communicator world();
  Communicator() = default;
  ~Communicator();
  Communicator(Communicator&& other) noexcept;
  Communicator& operator=(Communicator&& other) noexcept;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  // MPI_Comm_split; color < 0 means MPI_UNDEFINED (the result is null on this rank).
  [[nodiscard]] Communicator split(int color, int key) const;
  // MPI_Comm_split_type(MPI_COMM_TYPE_SHARED): the ranks of this node.
  [[nodiscard]] Communicator split_shared() const;
  [[nodiscard]] bool null() const noexcept { return comm_ == MPI_COMM_NULL; }
  [[nodiscard]] int rank() const;
  [[nodiscard]] int size() const;
  [[nodiscard]] MPI_Comm get() const noexcept { return comm_; }

 private:
  Communicator(MPI_Comm comm, bool owned) : comm_(comm), owned_(owned) {}
  void reset() noexcept;
  MPI_Comm comm_ = MPI_COMM_NULL;
  bool owned_ = false;
};

// One outstanding nonblocking operation. The destructor releases a still-active request with
// MPI_Request_free (the operation completes in the background).
class MpiRequest {
 public:
  MpiRequest() = default;
  ~MpiRequest();
  MpiRequest(MpiRequest&& other) noexcept;
  MpiRequest& operator=(MpiRequest&& other) noexcept;
  MpiRequest(const MpiRequest&) = delete;
  MpiRequest& operator=(const MpiRequest&) = delete;

  [[nodiscard]] MPI_Request* out() noexcept { return &request_; }
  [[nodiscard]] bool test();  // true once complete
  void wait();

 private:
  MPI_Request request_ = MPI_REQUEST_NULL;
};

// Transport over a communicator: MPI_Isend of byte buffers (kept alive until complete), and
// MPI_Iprobe + MPI_Get_count + MPI_Recv for variable-size messages.
class MpiTransport final : public Transport {
 public:
  explicit MpiTransport(const Communicator& comm);  // borrowed; must outlive the transport
  ~MpiTransport() override;

  int rank() const noexcept override { return rank_; }
  int size() const noexcept override { return size_; }
  void send(int dest, int tag, std::vector<std::uint8_t> bytes) override;
  std::optional<Packet> poll() override;
  void flush() override;
  [[noreturn]] void abort_job(int exit_code, const std::string& why) override;

 private:
  struct PendingSend {
    std::vector<std::uint8_t> bytes;
    MpiRequest request;
  };
  void progress_sends();

  const Communicator& comm_;
  int rank_ = 0;
  int size_ = 1;
  std::list<PendingSend> pending_;
};

}  // namespace omnidp::runtime
