#include "omnidp/manifest/input_paths.hpp"

#include <system_error>

#include "omnidp/common/error.hpp"
#include "omnidp/manifest/line_text.hpp"

namespace omnidp {
namespace fs = std::filesystem;

bool is_within(const fs::path& path, const fs::path& root) {
  auto p = path.begin();
  for (auto r = root.begin(); r != root.end(); ++r, ++p) {
    if (r->empty()) continue;  // a trailing separator
    if (p == path.end() || *p != *r) return false;
  }
  return true;
}

std::string resolve_input_path(const std::string& text, const fs::path& root,
                               const std::string& file, std::size_t line, const std::string& field) {
  const fs::path given(text);
  const fs::path joined = (given.is_absolute() ? given : root / given).lexically_normal();
  std::error_code ec;
  fs::path resolved = fs::weakly_canonical(joined, ec);
  if (ec) resolved = joined;
  if (!is_within(resolved, root)) {
    throw ManifestError(file, line, field,
                        "path " + in_quotes(text, kShownPathBytes) +
                            " leaves the manifest's folder " +
                            in_quotes(root.string(), kShownPathBytes) + " (it resolves to " +
                            in_quotes(resolved.string(), kShownPathBytes) + ")");
  }
  return resolved.string();
}

}  // namespace omnidp
