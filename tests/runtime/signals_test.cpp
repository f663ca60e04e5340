#include "omnidp/runtime/signals.hpp"

#include <gtest/gtest.h>
#include <pthread.h>

#include <csignal>

namespace omnidp::runtime {
namespace {

bool blocked(int sig) {
  sigset_t mask;
  sigemptyset(&mask);
  pthread_sigmask(SIG_BLOCK, nullptr, &mask);
  return sigismember(&mask, sig) == 1;
}

void (*handler_of(int sig))(int) {
  struct sigaction sa {};
  sigaction(sig, nullptr, &sa);
  return sa.sa_handler;
}

TEST(DrainSignals, CountsEachSignalAndRestoresTheHandlers) {
  const auto usr1_before = handler_of(SIGUSR1);
  const auto term_before = handler_of(SIGTERM);
  const auto int_before = handler_of(SIGINT);
  {
    const DrainSignals signals;
    EXPECT_EQ(DrainSignals::count(), 0);
    ASSERT_EQ(std::raise(SIGUSR1), 0);  // delivered to this thread before raise returns
    EXPECT_EQ(DrainSignals::count(), 1);
    EXPECT_EQ(DrainSignals::last(), SIGUSR1);
    ASSERT_EQ(std::raise(SIGTERM), 0);
    EXPECT_EQ(DrainSignals::count(), 2);
    EXPECT_EQ(DrainSignals::last(), SIGTERM);
    ASSERT_EQ(std::raise(SIGINT), 0);  // Ctrl-C drains (it used to kill the rank)
    EXPECT_EQ(DrainSignals::count(), 3);
    EXPECT_EQ(DrainSignals::last(), SIGINT);
  }
  EXPECT_EQ(handler_of(SIGUSR1), usr1_before);
  EXPECT_EQ(handler_of(SIGTERM), term_before);
  EXPECT_EQ(handler_of(SIGINT), int_before);
}

// A launcher that starts the job with SIGUSR1 blocked must not make it undrainable.
TEST(DrainSignals, UnblocksSignalsTheLauncherBlockedAndRestoresTheMask) {
  sigset_t usr1;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  ASSERT_EQ(pthread_sigmask(SIG_BLOCK, &usr1, nullptr), 0);
  {
    const DrainSignals signals;
    EXPECT_FALSE(blocked(SIGUSR1));
    ASSERT_EQ(std::raise(SIGUSR1), 0);
    EXPECT_EQ(DrainSignals::count(), 1);
  }
  EXPECT_TRUE(blocked(SIGUSR1));
  ASSERT_EQ(pthread_sigmask(SIG_UNBLOCK, &usr1, nullptr), 0);
}

}  // namespace
}  // namespace omnidp::runtime
