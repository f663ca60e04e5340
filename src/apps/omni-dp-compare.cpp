#include "omnidp/cli/compare.hpp"

int main(int argc, char** argv) { return omnidp::cli::compare_main(argc, argv); }
