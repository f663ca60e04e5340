#pragma once
// The MPI backend of Collective (runtime/collective.hpp): host memory, over a communicator of
// the group's ranks that only collectives use (the group's protocol messages go over another
// one). Every call goes through mpi_check() with the collective, the group and the rank in its
// context. Used from the worker thread, so MPI must run at MPI_THREAD_MULTIPLE
// (MpiEnvironment's required level; run_job asks for it when groups compute).

#include <string>

#include "omnidp/runtime/collective.hpp"
#include "omnidp/runtime/mpi.hpp"

namespace omnidp::runtime {

class MpiCollective final : public Collective {
 public:
  // Takes the communicator (a split of the world holding exactly the group's ranks).
  MpiCollective(Communicator comm, std::string group_name);

  int rank() const noexcept override { return rank_; }
  int size() const noexcept override { return size_; }
  const std::string& group_name() const noexcept override { return name_; }
  const char* backend() const noexcept override { return "mpi"; }
  bool takes_device_memory() const noexcept override { return false; }

  void all_gather(const void* send, void* recv, std::size_t count, ElementType type) override;
  void all_to_all(const void* send, void* recv, std::size_t count, ElementType type) override;
  void all_reduce_sum(void* data, std::size_t count, ElementType type) override;
  void broadcast(void* data, std::size_t count, ElementType type, int root) override;

  [[nodiscard]] const Communicator& communicator() const noexcept { return comm_; }

 private:
  // count x element size as an MPI count; RuntimeError past INT_MAX bytes.
  [[nodiscard]] int byte_count(const char* collective, std::size_t count, ElementType type) const;
  void check(int rc, const char* collective, const char* call) const;

  Communicator comm_;
  std::string name_;
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace omnidp::runtime
