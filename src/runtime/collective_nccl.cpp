// The NCCL backend (built with OMNIDP_WITH_NCCL only).
#include <cuda_runtime.h>
#include <nccl.h>

#include "omnidp/common/error.hpp"
#include "omnidp/runtime/collective_nccl.hpp"

namespace omnidp::runtime {
namespace {

ncclDataType_t nccl_type(ElementType type) {
  switch (type) {
    case ElementType::u8: return ncclUint8;
    case ElementType::i32: return ncclInt32;
    case ElementType::i64: return ncclInt64;
    case ElementType::f16: return ncclFloat16;
    case ElementType::bf16: return ncclBfloat16;
    case ElementType::f32: return ncclFloat32;
    case ElementType::f64: return ncclFloat64;
  }
  return ncclUint8;
}

class NcclCollective final : public Collective {
 public:
  NcclCollective(const Communicator& comm, std::string name, int device)
      : name_(std::move(name)), rank_(comm.rank()), size_(comm.size()), device_(device) {
    cuda("init", cudaSetDevice(device_), "cudaSetDevice");
    ncclUniqueId id{};
    if (rank_ == 0) nccl("init", ncclGetUniqueId(&id), "ncclGetUniqueId");
    mpi_check(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, comm.get()),
              "MPI_Bcast of the ncclUniqueId in " + where("init"));
    nccl("init", ncclCommInitRank(&comm_, size_, id, rank_), "ncclCommInitRank");
  }
  ~NcclCollective() override {
    if (comm_ != nullptr) ncclCommDestroy(comm_);
  }

  int rank() const noexcept override { return rank_; }
  int size() const noexcept override { return size_; }
  const std::string& group_name() const noexcept override { return name_; }
  const char* backend() const noexcept override { return "nccl"; }
  bool takes_device_memory() const noexcept override { return true; }

  void all_gather(const void* send, void* recv, std::size_t count, ElementType type) override {
    nccl("all_gather", ncclAllGather(send, recv, count, nccl_type(type), comm_, nullptr),
         "ncclAllGather");
  }
  void all_to_all(const void* send, void* recv, std::size_t count, ElementType type) override {
    const std::size_t bytes = count * element_size(type);
    nccl("all_to_all", ncclGroupStart(), "ncclGroupStart");
    for (int peer = 0; peer < size_; ++peer) {
      const auto off = static_cast<std::size_t>(peer) * bytes;
      nccl("all_to_all",
           ncclSend(static_cast<const char*>(send) + off, count, nccl_type(type), peer, comm_,
                    nullptr),
           "ncclSend");
      nccl("all_to_all",
           ncclRecv(static_cast<char*>(recv) + off, count, nccl_type(type), peer, comm_, nullptr),
           "ncclRecv");
    }
    nccl("all_to_all", ncclGroupEnd(), "ncclGroupEnd");
  }
  void all_reduce_sum(void* data, std::size_t count, ElementType type) override {
    nccl("all_reduce_sum", ncclAllReduce(data, data, count, nccl_type(type), ncclSum, comm_, nullptr),
         "ncclAllReduce");
  }
  void broadcast(void* data, std::size_t count, ElementType type, int root) override {
    check_root("broadcast", root);
    nccl("broadcast", ncclBroadcast(data, data, count, nccl_type(type), root, comm_, nullptr),
         "ncclBroadcast");
  }

 private:
  void nccl(const char* collective, ncclResult_t rc, const char* call) const {
    if (rc != ncclSuccess) fail(collective, std::string(call) + ": " + ncclGetErrorString(rc));
  }
  void cuda(const char* collective, cudaError_t rc, const char* call) const {
    if (rc != cudaSuccess) fail(collective, std::string(call) + ": " + cudaGetErrorString(rc));
  }

  std::string name_;
  int rank_;
  int size_;
  int device_;
  ncclComm_t comm_ = nullptr;
};

}  // namespace

bool nccl_built() noexcept { return true; }

std::unique_ptr<Collective> make_nccl_collective(const Communicator& comm,
                                                 const std::string& group_name, int cuda_device) {
  return std::make_unique<NcclCollective>(comm, group_name, cuda_device);
}

}  // namespace omnidp::runtime
