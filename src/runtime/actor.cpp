#include "omnidp/runtime/actor.hpp"

#include <chrono>

namespace omnidp::runtime {

ActorContext::ActorContext(const RankSetup& s)
    : setup(s),
      options(*s.options),
      config(s.options->config),
      rank(s.world->rank()),
      replica(s.topology.replica(rank)),
      leader(s.topology.is_leader(rank)),
      member(replica >= 0 && !leader) {}

double ActorContext::clock_s() const { return options.clock ? options.clock() : steady_s(); }

ErrorInfo error_info(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const Error& err) {
    return ErrorInfo{err.kind(), err.what()};
  } catch (const std::exception& err) {
    return ErrorInfo{ErrorKind::runtime, err.what()};
  } catch (...) {
    return ErrorInfo{ErrorKind::runtime, "unknown exception"};
  }
}

double steady_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
double unix_s() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace omnidp::runtime
