// signal_stop: the first SIGINT or SIGTERM is a stop request, the second an exit at once.

#include "tandem/common/signal_stop.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <thread>

namespace tandem {
namespace {

/// Polls `token` for up to two seconds: the watcher thread requests the stop, not the handler.
bool stops_soon(const std::stop_token& token) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (!token.stop_requested() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return token.stop_requested();
}

TEST(SignalStop, TheFirstSigintRequestsAStop) {
  signal_stop stop("stopping the test");
  EXPECT_FALSE(stop.token().stop_requested());
  EXPECT_EQ(stop.signal(), 0);
  std::raise(SIGINT);
  EXPECT_TRUE(stops_soon(stop.token()));
  EXPECT_EQ(stop.signal(), SIGINT);
  EXPECT_EQ(stop.exit_status(), 130);
}

TEST(SignalStop, SigtermExitsWith143) {
  signal_stop stop("stopping the test");
  std::raise(SIGTERM);
  EXPECT_TRUE(stops_soon(stop.token()));
  EXPECT_EQ(stop.exit_status(), 143);
  EXPECT_EQ(signal_name(stop.signal()), "SIGTERM");
}

TEST(SignalStop, StopCallbacksRunOnTheFirstSignal) {
  signal_stop stop("stopping the test");
  std::atomic<bool> called{false};
  const std::stop_callback on_stop(stop.token(), [&] { called = true; });
  std::raise(SIGINT);
  EXPECT_TRUE(stops_soon(stop.token()));
  EXPECT_TRUE(called.load());
}

TEST(SignalStop, AnotherCanBeMadeOnceOneIsGone) {
  { signal_stop first("first"); }
  signal_stop second("second");
  EXPECT_EQ(second.signal(), 0);
}

TEST(SignalStopDeathTest, TheSecondSignalExitsAtOnce) {
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

TEST(SignalStopDeathTest, ImmediateModeExitsOnTheFirst) {
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
