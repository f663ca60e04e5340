#pragma once
// The configuration as a run prints and stores it (the effective configuration,
// docs/configuration.md): to_yaml() less the test-only `faults:` section while it is at its
// defaults, so a production run never shows it. A configuration that sets a fault (a test)
// shows the whole section. parse_config_yaml() reads the result back to an equal Config.

#include <string>

#include "omnidp/config/config.hpp"

namespace omnidp {

[[nodiscard]] std::string to_run_yaml(const Config& config);

}  // namespace omnidp
