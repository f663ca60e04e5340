#pragma once
// omni-dp-batch: the whole command line (CLI11) and its flow. Called by every MPI rank.
namespace omnidp::cli {
[[nodiscard]] int batch_main(int argc, char** argv);
}
