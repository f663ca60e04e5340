#include "omnidp/cli/inspect.hpp"

int main(int argc, char** argv) { return omnidp::cli::inspect_main(argc, argv); }
