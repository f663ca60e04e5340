#include "omnidp/runtime/mpi.hpp"

#include <fmt/format.h>
#include <atomic>
#include <climits>
#include <cstdlib>

#include "omnidp/common/log.hpp"

namespace omnidp::runtime {
namespace {
std::atomic<int> g_world_rank{-1};
}  // namespace

void mpi_check(int rc, const std::string& call) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) {
    throw MpiError(call, g_world_rank.load(), fmt::format("MPI error code {}", rc));
  }
  throw MpiError(call, g_world_rank.load(), std::string(text, static_cast<std::size_t>(len)));
}

MpiEnvironment::MpiEnvironment(int required) {
  int initialized = 0;
  mpi_check(MPI_Initialized(&initialized), "MPI_Initialized");
  if (initialized != 0) {
    mpi_check(MPI_Query_thread(&provided_), "MPI_Query_thread");
  } else {
    mpi_check(MPI_Init_thread(nullptr, nullptr, required, &provided_), "MPI_Init_thread");
    owns_ = true;
  }
  mpi_check(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  int rank = 0;
  mpi_check(MPI_Comm_rank(MPI_COMM_WORLD, &rank), "MPI_Comm_rank");
  g_world_rank.store(rank);
  if (provided_ < required) {
    throw MpiError(
        "MPI_Init_thread", rank,
        fmt::format("the MPI library provides thread level {}, omni-dp needs {}", provided_,
                    (required >= MPI_THREAD_MULTIPLE
                         ? std::string("MPI_THREAD_MULTIPLE (replica groups that compute: "
                                       "their collectives run on the worker threads)")
                         : std::string("MPI_THREAD_FUNNELED"))));
  }
}

MpiEnvironment::~MpiEnvironment() {
  if (!owns_) return;
  const int rc = MPI_Finalize();
  if (rc != MPI_SUCCESS) log_error(fmt::format("MPI_Finalize failed with code {}", rc));
}

Communicator Communicator::world() { return Communicator(MPI_COMM_WORLD, false); }

Communicator::~Communicator() { reset(); }

Communicator::Communicator(Communicator&& other) noexcept
    : comm_(other.comm_), owned_(other.owned_) {
  other.comm_ = MPI_COMM_NULL;
  other.owned_ = false;
}

Communicator& Communicator::operator=(Communicator&& other) noexcept {
  if (this != &other) {
    reset();
    comm_ = other.comm_;
    owned_ = other.owned_;
    other.comm_ = MPI_COMM_NULL;
    other.owned_ = false;
  }
  return *this;
}

void Communicator::reset() noexcept {
  if (owned_ && comm_ != MPI_COMM_NULL) {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized == 0 && MPI_Comm_free(&comm_) != MPI_SUCCESS) {
      log_error("MPI_Comm_free failed");
    }
  }
  comm_ = MPI_COMM_NULL;
  owned_ = false;
}

Communicator Communicator::split(int color, int key) const {
  MPI_Comm out = MPI_COMM_NULL;
  mpi_check(MPI_Comm_split(comm_, color < 0 ? MPI_UNDEFINED : color, key, &out),
            fmt::format("MPI_Comm_split(color {})", color));
  return Communicator(out, out != MPI_COMM_NULL);
}

Communicator Communicator::split_shared() const {
  MPI_Comm out = MPI_COMM_NULL;
  mpi_check(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &out),
            "MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)");
  return Communicator(out, true);
}

int Communicator::rank() const {
  if (null()) return -1;
  int r = 0;
  mpi_check(MPI_Comm_rank(comm_, &r), "MPI_Comm_rank");
  return r;
}

int Communicator::size() const {
  if (null()) return 0;
  int s = 0;
  mpi_check(MPI_Comm_size(comm_, &s), "MPI_Comm_size");
  return s;
}

MpiRequest::~MpiRequest() {
  if (request_ != MPI_REQUEST_NULL) {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized == 0) MPI_Request_free(&request_);
  }
}

MpiRequest::MpiRequest(MpiRequest&& other) noexcept : request_(other.request_) {
  other.request_ = MPI_REQUEST_NULL;
}

MpiRequest& MpiRequest::operator=(MpiRequest&& other) noexcept {
  if (this != &other) {
    if (request_ != MPI_REQUEST_NULL) MPI_Request_free(&request_);
    request_ = other.request_;
    other.request_ = MPI_REQUEST_NULL;
  }
  return *this;
}

bool MpiRequest::test() {
  if (request_ == MPI_REQUEST_NULL) return true;
  int done = 0;
  mpi_check(MPI_Test(&request_, &done, MPI_STATUS_IGNORE), "MPI_Test");
  return done != 0;
}

void MpiRequest::wait() {
  if (request_ == MPI_REQUEST_NULL) return;
  mpi_check(MPI_Wait(&request_, MPI_STATUS_IGNORE), "MPI_Wait");
}

MpiTransport::MpiTransport(const Communicator& comm)
    : comm_(comm), rank_(comm.rank()), size_(comm.size()) {
  if (comm.null()) throw RuntimeError("MpiTransport on a null communicator");
}

MpiTransport::~MpiTransport() = default;

void MpiTransport::send(int dest, int tag, std::vector<std::uint8_t> bytes) {
  if (bytes.size() > static_cast<std::size_t>(INT_MAX)) {
    throw RuntimeError(fmt::format("message of {} bytes is too large", bytes.size()));
  }
  progress_sends();
  auto& p = pending_.emplace_back();
  p.bytes = std::move(bytes);
  mpi_check(MPI_Isend(p.bytes.data(), static_cast<int>(p.bytes.size()), MPI_BYTE, dest, tag,
                      comm_.get(), p.request.out()),
            fmt::format("MPI_Isend to rank {}", dest));
}

void MpiTransport::progress_sends() {
  for (auto it = pending_.begin(); it != pending_.end();) {
    it = it->request.test() ? pending_.erase(it) : std::next(it);
  }
}

std::optional<Packet> MpiTransport::poll() {
  progress_sends();
  int flag = 0;
  MPI_Status status{};
  mpi_check(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm_.get(), &flag, &status), "MPI_Iprobe");
  if (flag == 0) return std::nullopt;
  int count = 0;
  mpi_check(MPI_Get_count(&status, MPI_BYTE, &count), "MPI_Get_count");
  Packet packet;
  packet.source = status.MPI_SOURCE;
  packet.tag = status.MPI_TAG;
  packet.bytes.resize(static_cast<std::size_t>(count));
  mpi_check(MPI_Recv(packet.bytes.data(), count, MPI_BYTE, status.MPI_SOURCE, status.MPI_TAG,
                     comm_.get(), MPI_STATUS_IGNORE),
            fmt::format("MPI_Recv from rank {}", status.MPI_SOURCE));
  return packet;
}

void MpiTransport::flush() {
  for (auto& p : pending_) p.request.wait();
  pending_.clear();
}

void MpiTransport::abort_job(int exit_code, const std::string& why) {
  log_error(fmt::format("aborting the job (MPI_Abort, exit code {}): {}", exit_code, why));
  MPI_Abort(MPI_COMM_WORLD, exit_code);
  std::_Exit(exit_code);
}

}  // namespace omnidp::runtime
