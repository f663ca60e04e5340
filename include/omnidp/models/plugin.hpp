#pragma once
// Out-of-tree models (docs/models.md, "Out-of-tree models"): a shared library that registers
// models into the host's model table when `model.plugin: /path/libx.so` is set.
//
// A plugin is compiled against the installed headers (find_package(omnidp), omnidp::core) and
// links none of omnidp's libraries: their symbols come from the host executable, which exports
// them, so that the plugin registers into the one table of the process. It defines
//   OMNIDP_MODEL_PLUGIN(my_register)   // void my_register(omnidp::models::ModelTable&)
// at namespace scope, which exports the ABI version it was built with and its entry point.
//
// Threading: load_model_plugin() runs on the main thread before any actor starts.

#include <string>

#include "omnidp/models/model_table.hpp"

namespace omnidp::models {

// Bumped whenever ModelTable, ModelRegistration, Pipeline, Request, Video or Config change layout.
// 2: ModelInfo heads, GenerateContext axes; 3: Pipeline::flops, Config::runtime (MFU).
inline constexpr int kPluginAbiVersion = 3;

// dlopens `path` (kept loaded for the process's lifetime), checks its ABI version and lets it
// register its models. Loading the same path twice is a no-op. Throws ConfigError("model.plugin",
// ...) naming the path and dlerror(), a missing entry point, or both ABI versions on a mismatch;
// a duplicate model name is ModelTable::add()'s error.
void load_model_plugin(const std::string& path);

}  // namespace omnidp::models

#define OMNIDP_MODEL_PLUGIN(register_function)                                        \
  extern "C" __attribute__((visibility("default"))) int omnidp_plugin_abi_version() { \
    return ::omnidp::models::kPluginAbiVersion;                                       \
  }                                                                                   \
  extern "C" __attribute__((visibility("default"))) void omnidp_plugin_register(      \
      ::omnidp::models::ModelTable& table) {                                          \
    register_function(table);                                                         \
  }
