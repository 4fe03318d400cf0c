// signal_stop: the first SIGINT or SIGTERM is a stop request, the second an exit at once.

#include "tandem/common/signal_stop.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <thread>

namespace tandem {
namespace {

/// SIGINT and SIGTERM at their default while a test runs, whatever the test binary inherited
/// (a script that starts it in the background ignores SIGINT), and as they were afterwards.
class SignalStop : public ::testing::Test {
 protected:
  void SetUp() override {
    struct sigaction default_action {};
    default_action.sa_handler = SIG_DFL;
    ::sigaction(SIGINT, &default_action, &previous_int_);
    ::sigaction(SIGTERM, &default_action, &previous_term_);
  }
  void TearDown() override {
    ::sigaction(SIGINT, &previous_int_, nullptr);
    ::sigaction(SIGTERM, &previous_term_, nullptr);
  }
  struct sigaction previous_int_ {};
  struct sigaction previous_term_ {};
};
using SignalStopDeathTest = SignalStop;

/// Polls `token` for up to two seconds: the watcher thread requests the stop, not the handler.
bool stops_soon(const std::stop_token& token) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (!token.stop_requested() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return token.stop_requested();
}

TEST_F(SignalStop, TheFirstSigintRequestsAStop) {
  signal_stop stop("stopping the test");
  EXPECT_FALSE(stop.token().stop_requested());
  EXPECT_EQ(stop.signal(), 0);
  std::raise(SIGINT);
  EXPECT_TRUE(stops_soon(stop.token()));
  EXPECT_EQ(stop.signal(), SIGINT);
  EXPECT_EQ(stop.exit_status(), 130);
}

TEST_F(SignalStop, SigtermExitsWith143) {
  signal_stop stop("stopping the test");
  std::raise(SIGTERM);
  EXPECT_TRUE(stops_soon(stop.token()));
  EXPECT_EQ(stop.exit_status(), 143);
  EXPECT_EQ(signal_name(stop.signal()), "SIGTERM");
}

TEST_F(SignalStop, StopCallbacksRunOnTheFirstSignal) {
  signal_stop stop("stopping the test");
  std::atomic<bool> called{false};
  const std::stop_callback on_stop(stop.token(), [&] { called = true; });
  std::raise(SIGINT);
  EXPECT_TRUE(stops_soon(stop.token()));
  EXPECT_TRUE(called.load());
}

TEST_F(SignalStop, ASignalIgnoredBeforeStaysIgnored) {
  // As for `tandem run ... &` from a script: the shell ignores SIGINT for background jobs.
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  struct sigaction previous {};
  ::sigaction(SIGINT, &ignore, &previous);
  {
    signal_stop stop("stopping the test");
    std::raise(SIGINT);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_FALSE(stop.token().stop_requested());
  }
  ::sigaction(SIGINT, &previous, nullptr);
}

TEST_F(SignalStop, AnotherCanBeMadeOnceOneIsGone) {
  { signal_stop first("first"); }
  signal_stop second("second");
  EXPECT_EQ(second.signal(), 0);
}

TEST_F(SignalStopDeathTest, TheSecondSignalExitsAtOnce) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        signal_stop stop("stopping the test");
        std::raise(SIGINT);
        std::raise(SIGINT);
        std::this_thread::sleep_for(std::chrono::seconds(5));  // never reached
      },
      ::testing::ExitedWithCode(130), "second signal: quitting at once");
}

TEST_F(SignalStopDeathTest, ImmediateModeExitsOnTheFirst) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        signal_stop stop("", signal_stop::mode::immediate);
        std::raise(SIGTERM);
        std::this_thread::sleep_for(std::chrono::seconds(5));  // never reached
      },
      ::testing::ExitedWithCode(143), "interrupted");
}

}  // namespace
}  // namespace tandem
