#pragma once
// How the ranks of a job form replicas (docs/runtime.md, "Replica groups and devices") and which
// device each rank uses. Pure functions of the configuration and the world size, so every rank
// computes the same answer without communicating. Thread-safe.
//
// Working ranks are 0..W-1, or 1..W-1 with `parallel.coordinator_runs_work: false`. They form
// consecutive groups of G = tensor_parallel_size x sequence_parallel_size x cfg_parallel_size
// ranks; group k is replica k and its first rank is the leader (it receives the work from the
// coordinator, passes each request to its members and writes the result). Inside a group the
// cfg axis is the outermost: group rank g has cfg branch g / (tensor x sequence), sequence
// shard (g / tensor) % sequence and tensor shard g % tensor.

#include <string>
#include <vector>

#include "omnidp/config/config.hpp"
#include "omnidp/models/pipeline.hpp"

namespace omnidp::runtime {

// The three intra-group axes; each rank of a group belongs to one sub-group per axis: the ranks
// that differ from it only in that axis's coordinate.
enum class GroupAxis { cfg, sequence, tensor };
[[nodiscard]] const char* to_string(GroupAxis axis) noexcept;  // "cfg", "sequence", "tensor"

struct Topology {
  int world_size = 1;
  int group_size = 1;  // tensor x sequence x cfg
  int tensor_parallel = 1;
  int sequence_parallel = 1;
  int cfg_parallel = 1;
  int replicas = 1;
  bool coordinator_works = true;
  std::vector<int> replica_of_rank;  // -1 for a rank that does no work (rank 0, if so configured)
  std::vector<int> leader_of_replica;

  [[nodiscard]] int replica(int rank) const {
    return replica_of_rank.at(static_cast<std::size_t>(rank));
  }
  [[nodiscard]] bool works(int rank) const { return replica(rank) >= 0; }
  [[nodiscard]] bool is_leader(int rank) const;
  [[nodiscard]] int leader(int replica_index) const {
    return leader_of_replica.at(static_cast<std::size_t>(replica_index));
  }
  [[nodiscard]] std::vector<int> group_ranks(int replica_index) const;
  // The index of a working rank in its group (0 = the leader).
  [[nodiscard]] int group_rank(int rank) const { return rank - leader(replica(rank)); }
  // The axis's size (cfg_parallel, sequence_parallel or tensor_parallel).
  [[nodiscard]] int axis_size(GroupAxis axis) const noexcept;
  // Group rank g's coordinate on `axis` (its index in that sub-group, in axis order), and the
  // sub-group it belongs to (ranks with the same color share it; colors run 0..G/size-1).
  [[nodiscard]] int axis_index(int g, GroupAxis axis) const noexcept;
  [[nodiscard]] int axis_color(int g, GroupAxis axis) const noexcept;
  // The world ranks of the working rank's sub-group on `axis`, in axis order.
  [[nodiscard]] std::vector<int> axis_ranks(int rank, GroupAxis axis) const;
  // What a working rank does in its group, e.g. "cfg branch cond, leader" ("leader" alone for a
  // group of one); "coordinator only" for a rank that does no work.
  [[nodiscard]] std::string role(int rank) const;
};

// Throws ConfigError when the working ranks are not a multiple of the group size, when an
// explicit parallel.data_parallel_size disagrees, or when no rank would work.
[[nodiscard]] Topology make_topology(const ParallelConfig& parallel, int world_size);

// The device of the rank with node-local index `local_rank`: `model.device: cpu` -> CPU;
// otherwise `parallel.devices[local_rank]` ("cuda:N", "N" or "cpu") or GPU `local_rank` when
// the list is empty (auto). ConfigError when the list has no entry for this local rank.
[[nodiscard]] DeviceBinding bind_device(const ModelConfig& model, const ParallelConfig& parallel,
                                        int local_rank);
// The CUDA device name of ordinal `ordinal` as the driver reports it ("NVIDIA H200"), read
// through libcuda.so.1 (cuInit, cuDeviceGet, cuDeviceGetName) opened at run time, so that the
// runtime needs neither CUDA headers nor libraries; "" without a driver or such a device.
[[nodiscard]] std::string cuda_device_model(int ordinal);
// A worker's device label with the GPU's name: "cuda:3" -> "cuda:3 (NVIDIA H200)" (the rows'
// `device`, which the MFU figures look the peak up by: config/peak_flops.hpp); any other
// label, or no name, unchanged.
[[nodiscard]] std::string device_label_with_model(const DeviceBinding& binding,
                                                  const std::string& label);

}  // namespace omnidp::runtime
