// omni-dp-batch as users and launchers start it (issue 52, class 7): a small executable that
// blocks SIGUSR1, SIGTERM and SIGINT and execs the real program, omni-dp-batch.bin beside it.
// A blocked signal stays pending through execve, so a drain signal that mpirun forwards while
// the dynamic loader maps and relocates libtorch (hundreds of milliseconds on a loaded node,
// before any code of the process can run) is delivered once omni-dp-batch.bin's .preinit_array
// has installed the counting handlers and unblocked them, instead of killing the rank.
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

int main(int /*argc*/, char** argv) {
  sigset_t drain;
  sigemptyset(&drain);
  sigaddset(&drain, SIGUSR1);
  sigaddset(&drain, SIGTERM);
  sigaddset(&drain, SIGINT);
  sigset_t old;
  sigprocmask(SIG_BLOCK, &drain, &old);
  // Tests: a drain signal that arrives now stays pending through the whole loading of the
  // program's libraries (early_signal_test).
  if (const char* raise = std::getenv("OMNIDP_TEST_RAISE_IN_LAUNCHER");
      raise != nullptr && std::strcmp(raise, "1") == 0) {
    (void)::kill(::getpid(), SIGUSR1);
  }
  char self[4096];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  std::string real = "omni-dp-batch.bin";
  if (n > 0) {
    std::string dir(self, static_cast<std::size_t>(n));
    real = dir.substr(0, dir.rfind('/') + 1) + real;
  }
  ::execv(real.c_str(), argv);
  const int err = errno;
  sigprocmask(SIG_SETMASK, &old, nullptr);
  std::fprintf(stderr, "omni-dp-batch: error: cannot start %s: %s\n", real.c_str(),
               std::strerror(err));
  return 1;
}
