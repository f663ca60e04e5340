#pragma once
// The named number formats shared by the areas' text outputs (logs, reports, summaries, YAML).
// Everything else is written with fmt::format at the call site (fmt is a private dependency of
// each library: it stays out of the public headers). Pure functions, thread-safe.

#include <string>

namespace omnidp {

// `value` with `digits` decimals, printf's "%.*f" ("3.14", "12.0", "inf"): the fixed-point
// figures of reports whose text is written piece by piece (HTML, tables).
[[nodiscard]] std::string fixed(double value, int digits);

// The shortest decimal that reads back as `value`, in std::to_chars' choice of fixed or
// scientific notation ("0.1", "5", "1e-05", "1e+20"): a value as the user wrote it.
[[nodiscard]] std::string shortest(double value);

// shortest(value), with ".0" after a finite value it writes as an integer ("5.0", "0.1",
// "1e-05", "inf"): a float the YAML reads back as a float (the config's numbers, and the
// numerics profile's).
[[nodiscard]] std::string shortest_real(double value);

}  // namespace omnidp
