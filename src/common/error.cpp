#include "omnidp/common/error.hpp"

#include <fmt/format.h>

namespace omnidp {
namespace {
std::string compose(const std::string& message, const std::vector<std::string>& context) {
  std::string out;
  for (const auto& item : context) {
    if (item.empty()) continue;
    out += item;
    out += ": ";
  }
  return out + message;
}
}  // namespace

const char* to_string(ErrorKind kind) noexcept {
  switch (kind) {
    case ErrorKind::usage: return "usage";
    case ErrorKind::config: return "config";
    case ErrorKind::manifest: return "manifest";
    case ErrorKind::input: return "input";
    case ErrorKind::io: return "io";
    case ErrorKind::mpi: return "mpi";
    case ErrorKind::hdf5: return "hdf5";
    case ErrorKind::weights: return "weights";
    case ErrorKind::model: return "model";
    case ErrorKind::runtime: return "runtime";
    case ErrorKind::interrupted: return "interrupted";
  }
  return "unknown";
}

Error::Error(ErrorKind kind, const std::string& message, std::vector<std::string> context)
    : std::runtime_error(compose(message, context)),
      kind_(kind),
      message_(message),
      context_(std::move(context)) {}

ExitCode Error::exit_code() const noexcept {
  switch (kind_) {
    case ErrorKind::usage:
    case ErrorKind::config:
    case ErrorKind::manifest:
    case ErrorKind::input:
    case ErrorKind::weights: return ExitCode::usage;
    case ErrorKind::interrupted: return ExitCode::interrupted;
    default: return ExitCode::some_failed;
  }
}

namespace {
// "file[:line][:field]" (line 0: the file as a whole).
std::string manifest_context(const std::string& file, std::size_t line, const std::string& field) {
  std::string context = file;
  if (line > 0) {
    context += fmt::format(":{}", line);
  }
  if (!field.empty()) {
    context += ':';
    context += field;
  }
  return context;
}
}  // namespace

ManifestError::ManifestError(const std::string& file, std::size_t line, const std::string& field,
                             const std::string& message)
    : Error(ErrorKind::manifest, message, {manifest_context(file, line, field)}),
      file_(file),
      line_(line),
      field_(field) {}

}  // namespace omnidp
