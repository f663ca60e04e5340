#include "omnidp/cli/batch.hpp"

int main(int argc, char** argv) { return omnidp::cli::batch_main(argc, argv); }
