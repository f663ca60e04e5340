#pragma once
// The /summary group of results.h5 (docs/results.md): a run's RunSummary as attributes (counts,
// figures, settings) and two datasets (the per-rank busy seconds and fractions), written and
// read from the one field list of results/record.hpp. Plain functions; the caller owns the file.

#include <string>

#include "omnidp/results/hdf5.hpp"
#include "omnidp/results/record.hpp"

namespace omnidp::results {

// Creates <root>/summary with every field and a "source" attribute ("runtime", "summary.json"
// or "recomputed"). Throws Hdf5Error.
void write_summary_group(hid_t root, const RunSummary& summary, const std::string& source);

// Reads <root>/summary; `source` receives its "source" attribute. A field that a file written
// by an older version lacks keeps its default. Throws Hdf5Error when the group is missing.
[[nodiscard]] RunSummary read_summary_group(hid_t root, std::string& source);

}  // namespace omnidp::results
