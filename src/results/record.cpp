#include "omnidp/results/record.hpp"

namespace omnidp {

const char* to_string(RequestStatus status) noexcept {
  switch (status) {
    case RequestStatus::ok: return "ok";
    case RequestStatus::failed: return "failed";
  }
  return "unknown";
}

}  // namespace omnidp
