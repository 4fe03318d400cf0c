#pragma once
// Ctrl-C and `kill` for a command that can stop gracefully. While a signal_stop lives, the first
// SIGINT or SIGTERM becomes a stop request (std::stop_token: the command's work polls it or
// registers a std::stop_callback) and the second exits at once with 128 + its number, removing
// unfinished output files (atomic_file.hpp) and writing nothing more. In `immediate` mode the
// first signal already exits so, for work that has nothing worth keeping when cut short.
//
// The handler does only async-signal-safe things (an atomic, write, unlink, _exit): it records
// the signal and writes a byte to a pipe. A watcher thread reads the pipe, prints the notice
// and requests the stop, so the callbacks, which lock mutexes, run on an ordinary thread.
//
// A signal ignored when it is made stays ignored (a shell starts background jobs with SIGINT
// ignored). One signal_stop at a time per process; the previous handlers come back when it
// goes, unless a signal came (then a later one still exits with 128 + its number).

#include <memory>
#include <stop_token>
#include <string>

namespace tandem {

class signal_stop {
 public:
  enum class mode { graceful, immediate };

  /// `notice` is printed to stderr at the first signal in graceful mode, after "tandem:
  /// SIGINT: ", e.g. "stopping the jobs at their next iteration".
  explicit signal_stop(std::string notice, mode how = mode::graceful);
  ~signal_stop();
  signal_stop(const signal_stop&) = delete;
  signal_stop& operator=(const signal_stop&) = delete;

  [[nodiscard]] std::stop_token token() const;
  /// The signal that asked to stop (SIGINT, SIGTERM); 0 while none did.
  [[nodiscard]] int signal() const;
  /// 128 + signal(), the shell's convention: 130 for SIGINT, 143 for SIGTERM.
  [[nodiscard]] int exit_status() const;

 private:
  struct state;
  std::unique_ptr<state> state_;
};

/// "SIGINT", "SIGTERM", else "signal N".
[[nodiscard]] std::string signal_name(int signal);

}  // namespace tandem
