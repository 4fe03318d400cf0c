#include "tandem/common/signal_stop.hpp"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <thread>
#include <utility>

#include "tandem/common/atomic_file.hpp"
#include "tandem/common/error.hpp"

namespace tandem {

namespace {

// What the handler reads: plain atomics (lock-free, so async-signal-safe) and a descriptor.
std::atomic<int> received{0};  // the first signal; 0 while none came
std::atomic<bool> exit_at_once{false};
std::atomic<int> wake_descriptor{-1};  // the pipe's write end
std::atomic<bool> installed{false};    // one signal_stop at a time

constexpr char wake_byte = 1;
constexpr char quit_byte = 0;  // the watcher's end, from the destructor

void say(const char* text) {
  // Nothing to do about a failed write to stderr from a handler.
  static_cast<void>(::write(STDERR_FILENO, text, std::strlen(text)));
}

extern "C" void on_signal(int number) {
  const int saved_errno = errno;
  int none = 0;
  const bool first = received.compare_exchange_strong(none, number);
  if (!first || exit_at_once.load()) {
    remove_unfinished_files();
    say(first ? "\ntandem: interrupted; nothing was written\n"
              : "\ntandem: second signal: quitting at once, nothing more is written\n");
    ::_exit(128 + number);
  }
  const int descriptor = wake_descriptor.load();
  if (descriptor >= 0) static_cast<void>(::write(descriptor, &wake_byte, 1));
  errno = saved_errno;
}

}  // namespace

std::string signal_name(int signal) {
  if (signal == SIGINT) return "SIGINT";
  if (signal == SIGTERM) return "SIGTERM";
  return "signal " + std::to_string(signal);
}

struct signal_stop::state {
  std::stop_source source;
  std::string notice;
  int pipe[2] = {-1, -1};
  struct sigaction previous_int {};
  struct sigaction previous_term {};
  std::thread watcher;

  void watch() {
    char byte = quit_byte;
    for (;;) {
      const auto got = ::read(pipe[0], &byte, 1);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0 || byte == quit_byte) return;
      // Only the first signal writes here: a second one exits in the handler.
      const auto line = "\ntandem: " + signal_name(received.load()) + ": " + notice +
                        " (send it again to quit at once)\n";
      say(line.c_str());
      source.request_stop();
      return;
    }
  }
};

signal_stop::signal_stop(std::string notice, mode how) : state_(std::make_unique<state>()) {
  TANDEM_ASSERT(!installed.exchange(true), "one signal_stop at a time");
  auto& s = *state_;
  s.notice = std::move(notice);
  TANDEM_EXPECTS(::pipe(s.pipe) == 0, device_error,
                 std::string("cannot make a pipe for Ctrl-C handling: ") + std::strerror(errno));
  received = 0;
  exit_at_once = how == mode::immediate;
  wake_descriptor = s.pipe[1];
  s.watcher = std::thread([&s] { s.watch(); });
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;  // other threads' reads and writes carry on
  // A signal ignored when tandem started stays ignored: a shell runs background jobs with
  // SIGINT ignored so that Ctrl-C reaches only the foreground (`tandem run ... &` in a script).
  for (auto [number, previous] :
       {std::pair{SIGINT, &s.previous_int}, {SIGTERM, &s.previous_term}}) {
    ::sigaction(number, nullptr, previous);
    if (previous->sa_handler != SIG_IGN) ::sigaction(number, &action, nullptr);
  }
}

signal_stop::~signal_stop() {
  auto& s = *state_;
  // After a first signal the handler stays: a second one that comes while the process exits
  // (libtorch's teardown takes a while) still ends it with 128 + its number, as promised,
  // rather than killing it. Its second-signal path needs nothing this destructor frees.
  if (received.load() == 0) {
    ::sigaction(SIGINT, &s.previous_int, nullptr);
    ::sigaction(SIGTERM, &s.previous_term, nullptr);
  }
  wake_descriptor = -1;
  static_cast<void>(::write(s.pipe[1], &quit_byte, 1));
  s.watcher.join();
  ::close(s.pipe[0]);
  ::close(s.pipe[1]);
  installed = false;
}

std::stop_token signal_stop::token() const {
  return state_->source.get_token();
}

int signal_stop::signal() const {
  return received.load();
}

int signal_stop::exit_status() const {
  return 128 + signal();
}

}  // namespace tandem
