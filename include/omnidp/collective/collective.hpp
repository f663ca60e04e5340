#pragma once
// Collective operations over the ranks of one replica group (docs/runtime.md, "Collectives"),
// below the models (which call it) and the runtime (which builds the MPI and NCCL backends).
// Torch-free and MPI-free: the interface works on contiguous buffers; the models call it on
// tensors through models/layers/collective_ops.hpp, which copies CUDA tensors to the host for
// a backend that takes host memory only. Backends: MPI (runtime/collective_mpi.hpp, host
// memory, the group's sub-communicator), NCCL (CUDA memory, only in builds with NCCL) and
// in-process threads (make_in_process_collectives: tests, run_job_in_process).
//
// Every rank of the group calls the same collectives in the same order with the same counts
// and types (as MPI requires); a collective returns once this rank's part is complete. One
// Collective is used by one thread at a time. Failures throw an Error naming the collective,
// the group and the rank (MpiError for MPI failures, RuntimeError for bad arguments).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace omnidp {

enum class ElementType { u8, i32, i64, f16, bf16, f32, f64 };

[[nodiscard]] std::size_t element_size(ElementType type) noexcept;
[[nodiscard]] const char* to_string(ElementType type) noexcept;

class Collective {
 public:
  virtual ~Collective() = default;
  Collective() = default;
  Collective(const Collective&) = delete;
  Collective& operator=(const Collective&) = delete;

  // This rank's index in the group (0 = the group's leader) and the group's size.
  [[nodiscard]] virtual int rank() const noexcept = 0;
  [[nodiscard]] virtual int size() const noexcept = 0;
  // The group in errors and logs, e.g. "replica group 1 (world ranks 3,4)".
  [[nodiscard]] virtual const std::string& group_name() const noexcept = 0;
  // The backend's name: "mpi", "nccl" or "in-process".
  [[nodiscard]] virtual const char* backend() const noexcept = 0;
  // True when buffers may be CUDA device memory (NCCL); false: host memory only.
  [[nodiscard]] virtual bool takes_device_memory() const noexcept = 0;

  // recv (size() x count elements) gets every rank's `count` elements of send, in rank order.
  virtual void all_gather(const void* send, void* recv, std::size_t count, ElementType type) = 0;
  // send and recv hold size() blocks of `count` elements each: block j of send goes to rank j,
  // block j of recv came from rank j.
  virtual void all_to_all(const void* send, void* recv, std::size_t count, ElementType type) = 0;
  // Element-wise sum over the group, in place. MPI and in-process: i32, i64, f32, f64 (the
  // tensor layer sums f16/bf16 in f32); NCCL: all types.
  virtual void all_reduce_sum(void* data, std::size_t count, ElementType type) = 0;
  // The root's `count` elements to every rank, in place.
  virtual void broadcast(void* data, std::size_t count, ElementType type, int root) = 0;

 protected:
  // "<collective> on <group>, group rank <r> of <n>": the context of every error.
  [[nodiscard]] std::string where(const char* collective) const;
  // Throws RuntimeError(where(collective) + ": " + what).
  [[noreturn]] void fail(const char* collective, const std::string& what) const;
  // Checks a sum's type and a root's range (the checks every backend makes alike).
  void check_sum_type(ElementType type) const;
  void check_root(const char* collective, int root) const;
};

// A rank's collectives on the three axes of its replica group (runtime/topology.hpp: the
// ranks that share all other coordinates); null where the axis has size 1. Not owned.
struct GroupAxes {
  Collective* cfg = nullptr;
  Collective* sequence = nullptr;
  Collective* tensor = nullptr;
};

// "<group name>, <axis> axis (world ranks a,b)": the name of a sub-group's collectives.
[[nodiscard]] std::string axis_group_name(const std::string& group_name, const char* axis,
                                          const std::vector<int>& world_ranks);

// `size` collectives over one group of threads of this process: element i is rank i; each is
// used by its own thread. For tests and run_job_in_process.
[[nodiscard]] std::vector<std::unique_ptr<Collective>> make_in_process_collectives(
    int size, const std::string& group_name);

}  // namespace omnidp
