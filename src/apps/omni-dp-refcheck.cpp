#include "omnidp/cli/refcheck.hpp"

int main(int argc, char** argv) { return omnidp::cli::refcheck_main(argc, argv); }
