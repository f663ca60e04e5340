#include "omnidp/config/suggest.hpp"

#include <algorithm>
#include <numeric>

namespace omnidp {

std::size_t edit_distance(std::string_view a, std::string_view b) {
  // Three rolling rows of the dynamic-programming table (the swap looks two rows back).
  const std::size_t n = b.size();
  std::vector<std::size_t> before(n + 1), prev(n + 1), cur(n + 1);
  std::iota(prev.begin(), prev.end(), std::size_t{0});
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= n; ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        cur[j] = std::min(cur[j], before[j - 2] + 1);
      }
    }
    std::swap(before, prev);
    std::swap(prev, cur);
  }
  return prev[n];
}

std::string nearest_name(std::string_view name, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_distance = 0;
  std::size_t best_prefix = 0;
  const auto common_prefix = [name](const std::string& candidate) {
    std::size_t n = 0;
    while (n < name.size() && n < candidate.size() && name[n] == candidate[n]) ++n;
    return n;
  };
  for (const auto& candidate : candidates) {
    const std::size_t distance = edit_distance(name, candidate);
    const std::size_t limit = std::max<std::size_t>(2, std::max(name.size(), candidate.size()) / 3);
    const bool contains = name.size() >= 3 && candidate.size() >= 3 &&
                          (candidate.find(name) != std::string::npos ||
                           name.find(candidate) != std::string_view::npos);
    if (distance > limit && !contains) continue;
    const std::size_t prefix = common_prefix(candidate);
    if (best.empty() || distance < best_distance ||
        (distance == best_distance && prefix > best_prefix)) {
      best = candidate;
      best_distance = distance;
      best_prefix = prefix;
    }
  }
  return best;
}

std::string suggestion_suffix(std::string_view name, const std::vector<std::string>& candidates) {
  const std::string nearest = nearest_name(name, candidates);
  if (!nearest.empty()) return " (did you mean '" + nearest + "'?)";
  std::string out = " (valid: ";
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    if (i > 0) out += ", ";
    out += candidates[i];
  }
  return out + ")";
}

}  // namespace omnidp
