#include "omnidp/config/effective_yaml.hpp"

namespace omnidp {

std::string to_run_yaml(const Config& config) {
  std::string yaml = to_yaml(config);
  if (!(config.faults == FaultConfig{})) return yaml;
  // to_yaml writes each section as a top-level block: its key at column 0, its keys indented.
  const std::string key = "faults:";
  std::size_t begin = yaml.starts_with(key) ? 0 : yaml.find("\n" + key);
  if (begin == std::string::npos) return yaml;
  if (begin > 0) ++begin;  // past the newline
  std::size_t end = yaml.find('\n', begin);
  while (end != std::string::npos && end + 1 < yaml.size() && yaml[end + 1] == ' ') {
    end = yaml.find('\n', end + 1);
  }
  yaml.erase(begin, end == std::string::npos ? std::string::npos : end + 1 - begin);
  return yaml;
}

}  // namespace omnidp
