#pragma once
// Runs a front end's main function in-process with stdout and stderr captured (the CLI tests).

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace omnidp::cli::testing {

struct Outcome {
  int code = -1;
  std::string out;
  std::string err;
};

// `main(argc, argv)` with argv = {program, args...}.
template <class Main>
Outcome run_main(Main main, const char* program, std::vector<std::string> args) {
  args.insert(args.begin(), program);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  Outcome o;
  o.code = main(static_cast<int>(argv.size()), argv.data());
  o.out = ::testing::internal::GetCapturedStdout();
  o.err = ::testing::internal::GetCapturedStderr();
  return o;
}

}  // namespace omnidp::cli::testing
