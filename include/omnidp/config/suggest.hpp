#pragma once
// "Did you mean ...?" for unknown names (config keys, enum values, manifest fields).
// Pure functions, thread-safe.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace omnidp {

// Optimal-string-alignment distance: insertions, deletions, substitutions and swaps of two
// adjacent characters each cost 1 ("polcy" -> "policy" = 1, "modle" -> "model" = 1).
[[nodiscard]] std::size_t edit_distance(std::string_view a, std::string_view b);

// The candidate nearest to `name`, or "" when none is plausibly meant: a candidate qualifies
// when its distance is at most max(2, longer length / 3), or when one name contains the other
// (at least 3 characters). Ties go to the longer common prefix, then the earlier candidate.
[[nodiscard]] std::string nearest_name(std::string_view name,
                                       const std::vector<std::string>& candidates);

// " (did you mean 'x'?)" when there is a nearest name, else " (valid: a, b, c)": the tail of
// an "unknown ..." message.
[[nodiscard]] std::string suggestion_suffix(std::string_view name,
                                            const std::vector<std::string>& candidates);

}  // namespace omnidp
