#pragma once
// Runs a piece of a test in a forked child whose stdout and stderr are captured, under an
// alarm: a call that would block forever (a FIFO opened for reading, a lock never released)
// ends the child by SIGALRM and fails the test instead of hanging the test run.

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace omnidp::test {

struct ChildOutcome {
  int code = -1;      // the child's exit status
  bool hung = false;  // killed by the alarm: it blocked
  int signal = 0;     // the signal that ended it (SIGALRM when hung)
  std::string out;
  std::string err;
};

// `fn()` in a child process with `seconds` of alarm; its return value is the exit status.
inline ChildOutcome run_in_child(const std::function<int()>& fn, unsigned seconds = 60) {
  static int counter = 0;
  const auto base = std::filesystem::temp_directory_path() /
                    ("omnidp-child-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
  const std::string out_file = base.string() + ".out";
  const std::string err_file = base.string() + ".err";
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::alarm(seconds);
    if (std::freopen(out_file.c_str(), "w", stdout) == nullptr ||
        std::freopen(err_file.c_str(), "w", stderr) == nullptr) {
      ::_exit(98);
    }
    int code = 99;
    try {
      code = fn();
    } catch (...) {
      code = 97;
    }
    std::cout.flush();
    std::cerr.flush();
    std::fflush(nullptr);
    ::_exit(code);
  }
  ChildOutcome o;
  if (pid < 0) return o;
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (WIFEXITED(status)) o.code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) {
    o.signal = WTERMSIG(status);
    o.hung = o.signal == SIGALRM;
  }
  const auto slurp = [](const std::string& file) {
    std::ifstream in(file, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    std::filesystem::remove(file);
    return text.str();
  };
  o.out = slurp(out_file);
  o.err = slurp(err_file);
  return o;
}

// A front end's main (`main(argc, argv)`, argv = {program, args...}) in a child (run_in_child).
template <class Main>
ChildOutcome run_main_in_child(Main main, const char* program, std::vector<std::string> args,
                               unsigned seconds = 60) {
  return run_in_child(
      [&] {
        args.insert(args.begin(), program);
        std::vector<char*> argv;
        for (auto& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        return main(static_cast<int>(args.size()), argv.data());
      },
      seconds);
}

// The output of a child that hung, or ended by a signal, as a test failure message.
inline std::string describe(const ChildOutcome& o) {
  std::string s = o.hung ? "HUNG (killed by the alarm)\n"
                         : (o.signal != 0 ? "killed by signal " + std::to_string(o.signal) + "\n"
                                          : "exit " + std::to_string(o.code) + "\n");
  return s + "stdout:\n" + o.out + "stderr:\n" + o.err;
}

}  // namespace omnidp::test
