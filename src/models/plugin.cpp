#include "omnidp/models/plugin.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include <memory>
#include <set>
#include <utility>
#include <vector>

#include "omnidp/common/error.hpp"

namespace omnidp::models {
namespace {

// A dlopen handle (move-only RAII). RTLD_NODELETE keeps the code mapped after dlclose: the model
// table's registrations (std::function objects made by the plugin) outlive this handle when
// statics are destroyed at exit.
class SharedLibrary {
 public:
  explicit SharedLibrary(const std::string& path)
      : handle_(dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE)) {
    if (handle_ == nullptr)
      throw ConfigError("model.plugin", path + ": cannot load: " + last_error());
  }
  ~SharedLibrary() {
    if (handle_ != nullptr) dlclose(handle_);
  }
  SharedLibrary(SharedLibrary&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  SharedLibrary& operator=(SharedLibrary&&) = delete;
  SharedLibrary(const SharedLibrary&) = delete;
  SharedLibrary& operator=(const SharedLibrary&) = delete;

  [[nodiscard]] void* symbol(const char* name, const std::string& path) const {
    dlerror();
    void* s = dlsym(handle_, name);
    if (s == nullptr) {
      throw ConfigError("model.plugin", path + ": not an omni-dp model plugin (no " +
                                            std::string(name) + ": " + last_error() +
                                            "; define OMNIDP_MODEL_PLUGIN, see docs/models.md)");
    }
    return s;
  }

 private:
  static std::string last_error() {
    const char* e = dlerror();
    return e != nullptr ? e : "unknown error";
  }
  void* handle_;
};

}  // namespace

void load_model_plugin(const std::string& path) {
  static std::set<std::string> loaded;
  static std::vector<SharedLibrary> libraries;
  if (loaded.count(path) != 0) return;
  SharedLibrary library(path);
  using Version = int (*)();
  using Register = void (*)(ModelTable&);
  const auto version = reinterpret_cast<Version>(library.symbol("omnidp_plugin_abi_version", path));
  const int theirs = version();
  if (theirs != kPluginAbiVersion) {
    throw ConfigError("model.plugin",
                      fmt::format("{}: plugin ABI version {}, this omni-dp has version {} (rebuild "
                                  "the plugin against this installation)",
                                  path, theirs, kPluginAbiVersion));
  }
  const auto entry = reinterpret_cast<Register>(library.symbol("omnidp_plugin_register", path));
  // Staged first, so that each registration names the plugin as its origin (duplicate-name
  // errors say where both came from).
  ModelTable staged;
  entry(staged);
  for (auto& registration : staged.release()) {
    registration.origin = "plugin " + path;
    model_table().add(std::move(registration));
  }
  libraries.push_back(std::move(library));
  loaded.insert(path);
}

}  // namespace omnidp::models
