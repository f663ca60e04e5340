#include <signal.h>
#include <unistd.h>

#include "omnidp/cli/batch.hpp"
#include "omnidp/runtime/signals.hpp"

namespace {

// The drain handlers before any shared library initializes (issue 52, class 7): libtorch's
// initializers take seconds before main, and a USR1 that mpirun forwards meanwhile killed the
// rank (the default disposition). The executable's .preinit_array runs before every shared
// library's initializers (only the dynamic loader's mapping and relocation come earlier); the
// job then drains on what was counted, and a command that starts no job restores the defaults
// (batch_main). OMNIDP_TEST_RAISE_AT_PREINIT=1 raises SIGUSR1 here, after the install (tests).
void early_drain_handlers(int /*argc*/, char** /*argv*/, char** envp) {
  omnidp::runtime::install_early_drain_handlers();
  for (char** e = envp; e != nullptr && *e != nullptr; ++e) {
    const char* want = "OMNIDP_TEST_RAISE_AT_PREINIT=1";
    const char* have = *e;
    while (*want != '\0' && *have == *want) {
      ++want;
      ++have;
    }
    if (*want == '\0' && *have == '\0') (void)::kill(::getpid(), SIGUSR1);
  }
}

[[gnu::section(".preinit_array"),
  gnu::used]] void (*const g_preinit)(int, char**, char**) = &early_drain_handlers;

}  // namespace

int main(int argc, char** argv) { return omnidp::cli::batch_main(argc, argv); }
