#pragma once
// omni-dp-compare A B: joins two result sets by input key and reports differences.
namespace omnidp::cli {
[[nodiscard]] int compare_main(int argc, char** argv);
}
