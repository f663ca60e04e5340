#include "omnidp/runtime/topology.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include <array>
#include <charconv>

#include "omnidp/common/error.hpp"

namespace omnidp::runtime {

bool Topology::is_leader(int rank) const {
  const int r = replica(rank);
  return r >= 0 && leader(r) == rank;
}

std::vector<int> Topology::group_ranks(int replica_index) const {
  std::vector<int> ranks;
  for (int rank = 0; rank < world_size; ++rank) {
    if (replica(rank) == replica_index) ranks.push_back(rank);
  }
  return ranks;
}

const char* to_string(GroupAxis axis) noexcept {
  switch (axis) {
    case GroupAxis::cfg: return "cfg";
    case GroupAxis::sequence: return "sequence";
    case GroupAxis::tensor: return "tensor";
  }
  return "?";
}

int Topology::axis_size(GroupAxis axis) const noexcept {
  switch (axis) {
    case GroupAxis::cfg: return cfg_parallel;
    case GroupAxis::sequence: return sequence_parallel;
    case GroupAxis::tensor: return tensor_parallel;
  }
  return 1;
}

int Topology::axis_index(int g, GroupAxis axis) const noexcept {
  switch (axis) {
    case GroupAxis::cfg: return g / (tensor_parallel * sequence_parallel);
    case GroupAxis::sequence: return (g / tensor_parallel) % sequence_parallel;
    case GroupAxis::tensor: return g % tensor_parallel;
  }
  return 0;
}

int Topology::axis_color(int g, GroupAxis axis) const noexcept {
  const int branch = axis_index(g, GroupAxis::cfg);
  const int seq = axis_index(g, GroupAxis::sequence);
  const int ten = axis_index(g, GroupAxis::tensor);
  switch (axis) {
    case GroupAxis::cfg: return seq * tensor_parallel + ten;
    case GroupAxis::sequence: return branch * tensor_parallel + ten;
    case GroupAxis::tensor: return branch * sequence_parallel + seq;
  }
  return 0;
}

std::vector<int> Topology::axis_ranks(int rank, GroupAxis axis) const {
  const int leader_rank = leader(replica(rank));
  const int color = axis_color(group_rank(rank), axis);
  std::vector<int> ranks;
  for (int g = 0; g < group_size; ++g) {
    if (axis_color(g, axis) == color) ranks.push_back(leader_rank + g);
  }
  return ranks;  // ascending g is ascending axis index (the other coordinates are fixed)
}

std::string Topology::role(int rank) const {
  if (!works(rank)) return "coordinator only";
  const int g = group_rank(rank);
  std::string r;
  const auto add = [&r](const std::string& part) { r += (r.empty() ? "" : ", ") + part; };
  if (cfg_parallel > 1) {
    add(std::string("cfg branch ") +
        (g / (tensor_parallel * sequence_parallel) == 0 ? "cond" : "uncond"));
  }
  if (sequence_parallel > 1) {
    add(fmt::format("sequence shard {}", (g / tensor_parallel) % sequence_parallel));
  }
  if (tensor_parallel > 1) add(fmt::format("tensor shard {}", g % tensor_parallel));
  if (g == 0) add("leader");
  return r;
}

Topology make_topology(const ParallelConfig& parallel, int world_size) {
  if (world_size < 1) throw RuntimeError(fmt::format("world size {}", world_size));
  Topology t;
  t.world_size = world_size;
  t.tensor_parallel = parallel.tensor_parallel_size;
  t.sequence_parallel = parallel.sequence_parallel_size;
  t.cfg_parallel = parallel.cfg_parallel_size;
  t.group_size = t.tensor_parallel * t.sequence_parallel * t.cfg_parallel;
  t.coordinator_works = parallel.coordinator_runs_work;
  if (t.group_size < 1) {
    throw ConfigError(
        "parallel.tensor_parallel_size",
        "tensor_parallel_size x sequence_parallel_size x cfg_parallel_size must be at least 1");
  }
  const int first = t.coordinator_works ? 0 : 1;
  const int working = world_size - first;
  if (working < 1) {
    throw ConfigError(
        "parallel.coordinator_runs_work",
        fmt::format("false needs at least 2 ranks (the world has {}): rank 0 only coordinates",
                    world_size));
  }
  if (working % t.group_size != 0) {
    throw ConfigError(
        "parallel",
        fmt::format("{} working rank(s) (world size {}{}) cannot be split into replica groups of "
                    "tensor_parallel_size x sequence_parallel_size x cfg_parallel_size = {} x {} x "
                    "{} = {} ranks",
                    working, world_size, (t.coordinator_works ? "" : " minus the coordinator"),
                    parallel.tensor_parallel_size, parallel.sequence_parallel_size,
                    parallel.cfg_parallel_size, t.group_size));
  }
  t.replicas = working / t.group_size;
  if (parallel.data_parallel_size != 0 && parallel.data_parallel_size != t.replicas) {
    throw ConfigError("parallel.data_parallel_size",
                      fmt::format("{} replicas requested, but {} ranks in groups of {} give {} "
                                  "(use auto, or launch {} ranks)",
                                  parallel.data_parallel_size, world_size, t.group_size, t.replicas,
                                  parallel.data_parallel_size * t.group_size + first));
  }
  t.replica_of_rank.assign(static_cast<std::size_t>(world_size), -1);
  for (int k = 0; k < t.replicas; ++k) {
    t.leader_of_replica.push_back(first + k * t.group_size);
    for (int i = 0; i < t.group_size; ++i) {
      t.replica_of_rank[static_cast<std::size_t>(first + k * t.group_size + i)] = k;
    }
  }
  return t;
}

DeviceBinding bind_device(const ModelConfig& model, const ParallelConfig& parallel, int local_rank) {
  DeviceBinding d;
  if (model.device == DeviceKind::cpu) {
    d.kind = DeviceKind::cpu;
    d.name = "cpu";
    return d;
  }
  d.kind = DeviceKind::cuda;
  d.index = local_rank;
  if (!parallel.devices.empty()) {
    if (local_rank < 0 || static_cast<std::size_t>(local_rank) >= parallel.devices.size()) {
      throw ConfigError(
          "parallel.devices",
          fmt::format("no entry for local rank {} ({} listed; list one device per rank of a node)",
                      local_rank, parallel.devices.size()));
    }
    std::string entry = parallel.devices[static_cast<std::size_t>(local_rank)];
    if (entry == "cpu") {
      d.kind = DeviceKind::cpu;
      d.index = 0;
      d.name = "cpu";
      return d;
    }
    if (entry.starts_with("cuda:")) entry = entry.substr(5);
    int index = -1;
    const auto* end = entry.data() + entry.size();
    const auto [ptr, ec] = std::from_chars(entry.data(), end, index);
    if (ec != std::errc() || ptr != end || index < 0) {
      throw ConfigError(
          "parallel.devices",
          fmt::format("entry '{}' of local rank {} is not cuda:N, N or cpu",
                      parallel.devices[static_cast<std::size_t>(local_rank)], local_rank));
    }
    d.index = index;
  }
  d.name = fmt::format("cuda:{}", d.index);
  return d;
}

std::string cuda_device_model(int ordinal) {
  // The driver API's C signatures (CUresult = int, CUdevice = int); the library stays loaded.
  using Init = int (*)(unsigned int);
  using DeviceGet = int (*)(int*, int);
  using DeviceGetName = int (*)(char*, int, int);
  void* lib = ::dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (lib == nullptr) return "";
  const auto init = reinterpret_cast<Init>(::dlsym(lib, "cuInit"));
  const auto device_get = reinterpret_cast<DeviceGet>(::dlsym(lib, "cuDeviceGet"));
  const auto device_name = reinterpret_cast<DeviceGetName>(::dlsym(lib, "cuDeviceGetName"));
  if (init == nullptr || device_get == nullptr || device_name == nullptr || init(0) != 0) return "";
  int device = 0;
  std::array<char, 256> name{};
  if (device_get(&device, ordinal) != 0) return "";
  if (device_name(name.data(), static_cast<int>(name.size()), device) != 0) return "";
  return std::string(name.data());
}

std::string device_label_with_model(const DeviceBinding& binding, const std::string& label) {
  if (binding.kind != DeviceKind::cuda || label != fmt::format("cuda:{}", binding.index)) {
    return label;
  }
  const std::string model = cuda_device_model(binding.index);
  return model.empty() ? label : label + " (" + model + ")";
}

}  // namespace omnidp::runtime
