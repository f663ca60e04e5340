#include "omnidp/manifest/request.hpp"

namespace omnidp {

const char* to_string(Task task) noexcept {
  switch (task) {
    case Task::t2v: return "t2v";
    case Task::i2v: return "i2v";
  }
  return "unknown";
}

}  // namespace omnidp
