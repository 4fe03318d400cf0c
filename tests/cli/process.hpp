#pragma once
// The `tandem` binary run as a user runs it, for end-to-end tests: its arguments, its stdout and
// stderr (each in a file, readable while it runs), signals sent to it, and its exit status.

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace tandem::cli::testing_support {

inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

class process {
 public:
  /// Starts TANDEM_EXECUTABLE with `arguments`; its output goes to files in `folder`.
  process(const std::vector<std::string>& arguments, const std::filesystem::path& folder)
      : out_path_(folder / "stdout.txt"), err_path_(folder / "stderr.txt") {
    std::vector<std::string> line{TANDEM_EXECUTABLE};
    line.insert(line.end(), arguments.begin(), arguments.end());
    // Everything the child needs is made before the fork: it may only exec.
    std::vector<char*> argv;
    for (auto& word : line) argv.push_back(word.data());
    argv.push_back(nullptr);
    const int out = ::open(out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    const int err = ::open(err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (out < 0 || err < 0) throw std::runtime_error("cannot make the output files");
    pid_ = ::fork();
    if (pid_ < 0) throw std::runtime_error("fork failed");
    if (pid_ == 0) {
      // Signals the test sends must reach tandem's handlers even if this test runs with them
      // ignored (started in the background by a script); exec keeps an ignored signal ignored.
      struct sigaction default_action {};
      default_action.sa_handler = SIG_DFL;
      ::sigaction(SIGINT, &default_action, nullptr);
      ::sigaction(SIGTERM, &default_action, nullptr);
      ::dup2(out, STDOUT_FILENO);
      ::dup2(err, STDERR_FILENO);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    ::close(out);
    ::close(err);
  }
  ~process() {
    if (!status_) {
      ::kill(pid_, SIGKILL);
      int ignored = 0;
      ::waitpid(pid_, &ignored, 0);
    }
  }
  process(const process&) = delete;
  process& operator=(const process&) = delete;

  void send(int signal) const { ::kill(pid_, signal); }

  /// Waits until `ready(stderr so far)` holds; false after `limit`, or if the process ended.
  bool wait_for_stderr(const std::function<bool(const std::string&)>& ready,
                       std::chrono::duration<double> limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
      if (ready(stderr_text())) return true;
      if (poll_exit()) return ready(stderr_text());
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

  /// The exit status once it exited within `limit` (-signal when a signal killed it); nullopt
  /// when it is still running.
  std::optional<int> wait(std::chrono::duration<double> limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!poll_exit() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return status_;
  }

  [[nodiscard]] std::string stdout_text() const { return read_file(out_path_); }
  [[nodiscard]] std::string stderr_text() const { return read_file(err_path_); }

 private:
  bool poll_exit() {
    if (status_) return true;
    int raw = 0;
    if (::waitpid(pid_, &raw, WNOHANG) != pid_) return false;
    status_ = WIFEXITED(raw) ? WEXITSTATUS(raw) : -WTERMSIG(raw);
    return true;
  }

  std::filesystem::path out_path_;
  std::filesystem::path err_path_;
  pid_t pid_ = -1;
  std::optional<int> status_;
};

/// Runs tandem to its end (at most a minute) and returns its exit status, stdout and stderr.
struct finished_run {
  int status = -1;
  std::string out;
  std::string err;
};

inline finished_run run_tandem(const std::vector<std::string>& arguments,
                               const std::filesystem::path& folder) {
  process tandem(arguments, folder);
  const auto status = tandem.wait(std::chrono::minutes(1));
  return {status.value_or(-1), tandem.stdout_text(), tandem.stderr_text()};
}

}  // namespace tandem::cli::testing_support
