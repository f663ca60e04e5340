// LD_PRELOAD'ed by early_signal_test: SIGUSR1 to the process from a shared library's
// initializer, as mpirun forwards a drain signal while libtorch's libraries initialize, seconds
// before main (issue 52, class 7).
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

namespace {

[[gnu::constructor]] void raise_usr1_while_libraries_initialize() {
  ::unsetenv("LD_PRELOAD");  // not for the processes it starts (a singleton's Open MPI daemon)
  (void)::kill(::getpid(), SIGUSR1);
}

}  // namespace
