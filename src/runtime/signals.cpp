#include "omnidp/runtime/signals.hpp"

#include <fmt/format.h>
#include <pthread.h>

#include <atomic>
#include <csignal>
#include <cstring>
#include <string>

#include "omnidp/common/error.hpp"
#include "omnidp/results/attempt_log.hpp"

namespace omnidp::runtime {
namespace {

static_assert(std::atomic<int>::is_always_lock_free, "signal flags must be lock-free");
std::atomic<int> g_count{0};
std::atomic<int> g_last{0};
struct sigaction g_old_usr1 {};
struct sigaction g_old_term {};
struct sigaction g_old_int {};
sigset_t g_old_mask;
std::atomic<bool> g_early{false};  // install_early_drain_handlers ran; its count not yet taken

void on_drain_signal(int sig) {
  g_last.store(sig, std::memory_order_relaxed);
  g_count.fetch_add(1, std::memory_order_relaxed);
  // The rank was told to stop from outside (a drain, or mpirun ending the job because another
  // rank died): the attempts this kill may cut short are no evidence against their requests.
  results::AttemptLog::note_signal(sig);
}

void install(int sig, struct sigaction* old) {
  struct sigaction sa {};
  sa.sa_handler = &on_drain_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  if (sigaction(sig, &sa, old) != 0) {
    throw RuntimeError(std::string("sigaction failed: ") + std::strerror(errno),
                       {fmt::format("signal {}", sig)});
  }
}

}  // namespace

void install_early_drain_handlers() noexcept {
  struct sigaction sa {};
  sa.sa_handler = &on_drain_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (const int sig : {SIGUSR1, SIGTERM, SIGINT}) (void)sigaction(sig, &sa, nullptr);
  sigset_t drain;
  sigemptyset(&drain);
  sigaddset(&drain, SIGUSR1);
  sigaddset(&drain, SIGTERM);
  sigaddset(&drain, SIGINT);
  (void)sigprocmask(SIG_UNBLOCK, &drain, nullptr);
  g_early.store(true);
}

void release_early_drain_handlers() noexcept {
  if (!g_early.exchange(false)) return;
  struct sigaction sa {};
  sa.sa_handler = SIG_DFL;
  sigemptyset(&sa.sa_mask);
  for (const int sig : {SIGUSR1, SIGTERM, SIGINT}) (void)sigaction(sig, &sa, nullptr);
  if (g_count.load() > 0) (void)std::raise(g_last.load());
}

DrainSignals::DrainSignals() {
  if (!g_early.exchange(false)) {  // else keep what the early handlers counted
    g_count.store(0);
    g_last.store(0);
  }
  install(SIGUSR1, &g_old_usr1);
  install(SIGTERM, &g_old_term);
  install(SIGINT, &g_old_int);  // Ctrl-C drains too: a second one abandons
  // A launcher may start the job with these signals blocked (a blocked mask is inherited
  // through fork and exec): they would stay pending and never drain the job.
  sigset_t drain;
  sigemptyset(&drain);
  sigaddset(&drain, SIGUSR1);
  sigaddset(&drain, SIGTERM);
  sigaddset(&drain, SIGINT);
  if (const int rc = pthread_sigmask(SIG_UNBLOCK, &drain, &g_old_mask); rc != 0) {
    throw RuntimeError(std::string("pthread_sigmask failed: ") + std::strerror(rc),
                       {"drain signals"});
  }
}

DrainSignals::~DrainSignals() {
  pthread_sigmask(SIG_SETMASK, &g_old_mask, nullptr);
  sigaction(SIGUSR1, &g_old_usr1, nullptr);
  sigaction(SIGTERM, &g_old_term, nullptr);
  sigaction(SIGINT, &g_old_int, nullptr);
}

int DrainSignals::count() noexcept { return g_count.load(std::memory_order_relaxed); }
int DrainSignals::last() noexcept { return g_last.load(std::memory_order_relaxed); }

}  // namespace omnidp::runtime
