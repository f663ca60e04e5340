#pragma once
// One rank's ActorContext for the actor tests (worker, writer, coordinator actor): a world of
// `world_size` in-process ranks, this one rank 0, and the events the actor posted.

#include <memory>
#include <vector>

#include "omnidp/runtime/actor.hpp"
#include "omnidp/runtime/rank.hpp"

namespace omnidp::runtime::testing {

struct ActorHarness {
  explicit ActorHarness(JobOptions job, int world_size = 1)
      : options(std::move(job)), network(world_size) {
    setup.options = &options;
    setup.world = &network.endpoint(0);
    setup.topology = make_topology(options.config.parallel, world_size);
    setup.host = "test-host";
    context = std::make_unique<ActorContext>(setup);
  }

  // Every event posted so far, in order.
  std::vector<LocalEvent> events() {
    std::vector<LocalEvent> out;
    while (auto ev = context->events.try_pop()) out.push_back(std::move(*ev));
    return out;
  }
  // The messages among `events`, in order.
  static std::vector<OutMsg> messages(const std::vector<LocalEvent>& events) {
    std::vector<OutMsg> out;
    for (const auto& ev : events) {
      if (const auto* m = std::get_if<OutMsg>(&ev)) out.push_back(*m);
    }
    return out;
  }

  JobOptions options;
  InProcessNetwork network;
  RankSetup setup;
  std::unique_ptr<ActorContext> context;
};

}  // namespace omnidp::runtime::testing
