#include "omnidp/runtime/collective_mpi.hpp"

#include <fmt/format.h>
#include <climits>

#include "omnidp/common/error.hpp"

namespace omnidp::runtime {

MpiCollective::MpiCollective(Communicator comm, std::string group_name)
    : comm_(std::move(comm)), name_(std::move(group_name)) {
  if (comm_.null()) throw RuntimeError("MpiCollective on a null communicator (" + name_ + ")");
  rank_ = comm_.rank();
  size_ = comm_.size();
}

void MpiCollective::check(int rc, const char* collective, const char* call) const {
  mpi_check(rc, std::string(call) + " in " + where(collective));
}

int MpiCollective::byte_count(const char* collective, std::size_t count, ElementType type) const {
  const std::size_t bytes = count * element_size(type);
  if (bytes > static_cast<std::size_t>(INT_MAX)) {
    fail(collective, fmt::format("{} bytes per rank is more than one MPI call takes", bytes));
  }
  return static_cast<int>(bytes);
}

void MpiCollective::all_gather(const void* send, void* recv, std::size_t count, ElementType type) {
  const int n = byte_count("all_gather", count, type);
  check(MPI_Allgather(send, n, MPI_BYTE, recv, n, MPI_BYTE, comm_.get()), "all_gather",
        "MPI_Allgather");
}

void MpiCollective::all_to_all(const void* send, void* recv, std::size_t count, ElementType type) {
  const int n = byte_count("all_to_all", count, type);
  check(MPI_Alltoall(send, n, MPI_BYTE, recv, n, MPI_BYTE, comm_.get()), "all_to_all",
        "MPI_Alltoall");
}

void MpiCollective::all_reduce_sum(void* data, std::size_t count, ElementType type) {
  check_sum_type(type);
  MPI_Datatype t = MPI_FLOAT;
  switch (type) {
    case ElementType::i32: t = MPI_INT32_T; break;
    case ElementType::i64: t = MPI_INT64_T; break;
    case ElementType::f64: t = MPI_DOUBLE; break;
    default: t = MPI_FLOAT; break;
  }
  if (count > static_cast<std::size_t>(INT_MAX)) {
    fail("all_reduce_sum", fmt::format("{} elements is more than one MPI call takes", count));
  }
  check(MPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(count), t, MPI_SUM, comm_.get()),
        "all_reduce_sum", "MPI_Allreduce");
}

void MpiCollective::broadcast(void* data, std::size_t count, ElementType type, int root) {
  check_root("broadcast", root);
  const int n = byte_count("broadcast", count, type);
  check(MPI_Bcast(data, n, MPI_BYTE, root, comm_.get()), "broadcast", "MPI_Bcast");
}

}  // namespace omnidp::runtime
