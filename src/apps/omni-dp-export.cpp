#include "omnidp/cli/export.hpp"

int main(int argc, char** argv) { return omnidp::cli::export_main(argc, argv); }
