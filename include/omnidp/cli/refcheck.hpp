#pragma once
// omni-dp-refcheck DIR: runs every reference case folder under DIR.
namespace omnidp::cli {
[[nodiscard]] int refcheck_main(int argc, char** argv);
}
