#include "omnidp/results/summary_group.hpp"

#include <cstdint>
#include <optional>
#include <type_traits>
#include <vector>

namespace omnidp::results {

void write_summary_group(hid_t root, const RunSummary& summary, const std::string& source) {
  const h5::Group g = h5::create_group(root, "summary");
  const hid_t id = g.id();
  h5::write_attribute(id, "source", std::string_view(source));
  for_each_summary_field(summary, [&](const char* name, const auto& value) {
    using T = std::decay_t<decltype(value)>;
    if constexpr (std::is_same_v<T, std::vector<double>>) {
      h5::write_double_dataset(id, name, value);
    } else if constexpr (std::is_same_v<T, std::string>) {
      h5::write_attribute(id, name, std::string_view(value));
    } else if constexpr (std::is_same_v<T, double>) {
      h5::write_attribute(id, name, value);
    } else if constexpr (std::is_same_v<T, std::optional<double>>) {
      if (value) h5::write_attribute(id, name, *value);  // unset: no attribute
    } else {                                             // counts, sizes and flags: 64-bit integers
      h5::write_attribute(id, name, static_cast<std::int64_t>(value));
    }
  });
}

RunSummary read_summary_group(hid_t root, std::string& source) {
  const h5::Group g = h5::open_group(root, "summary");
  const hid_t id = g.id();
  source = h5::read_string_attribute(id, "source");
  RunSummary s;
  for_each_summary_field(s, [&](const char* name, auto& value) {
    using T = std::decay_t<decltype(value)>;
    if constexpr (std::is_same_v<T, std::vector<double>>) {
      if (h5::link_exists(id, name)) value = h5::read_double_dataset(id, name);
    } else if (h5::has_attribute(id, name)) {
      if constexpr (std::is_same_v<T, std::string>) {
        value = h5::read_string_attribute(id, name);
      } else if constexpr (std::is_same_v<T, double>) {
        value = h5::read_double_attribute(id, name);
      } else if constexpr (std::is_same_v<T, std::optional<double>>) {
        value = h5::read_double_attribute(id, name);
      } else if constexpr (std::is_same_v<T, bool>) {
        value = h5::read_int_attribute(id, name) != 0;
      } else {
        value = static_cast<T>(h5::read_int_attribute(id, name));
      }
    }
  });
  return s;
}

}  // namespace omnidp::results
