#include "tandem/common/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <optional>
#include <streambuf>
#include <vector>

#include "tandem/common/error.hpp"

namespace tandem {

namespace {

/// A stream buffer over a file descriptor that keeps the first write error (errno), which
/// std::ofstream would reduce to a failbit without a reason.
class fd_buffer final : public std::streambuf {
 public:
  explicit fd_buffer(int fd) : fd_(fd), buffer_(std::size_t{64} << 10) { reset(); }

  /// The errno of the first failed write; 0 when none failed.
  [[nodiscard]] int error() const { return error_; }

 protected:
  int_type overflow(int_type c) override {
    if (!drain()) return traits_type::eof();
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(c);
      pbump(1);
    }
    return traits_type::not_eof(c);
  }
  int sync() override { return drain() ? 0 : -1; }

 private:
  void reset() { setp(buffer_.data(), buffer_.data() + buffer_.size()); }

  bool drain() {
    if (error_ != 0) return false;
    for (const char* at = pbase(); at < pptr();) {
      const auto written = ::write(fd_, at, static_cast<std::size_t>(pptr() - at));
      if (written < 0 && errno == EINTR) continue;
      if (written <= 0) {
        error_ = written < 0 ? errno : EIO;
        return false;
      }
      at += written;
    }
    reset();
    return true;
  }

  int fd_;
  std::vector<char> buffer_;
  int error_ = 0;
};

// The temporaries not yet committed or abandoned, where a signal handler can read them: fixed
// slots, each claimed by a compare-and-swap and published once its path is complete. A file
// that finds no free slot is still written; only a hard exit may then leave its temporary.
struct pending_slot {
  static constexpr int free = 0, filling = 1, published = 2;
  std::atomic<int> state{free};
  std::array<char, 4096> path{};
};
std::array<pending_slot, 16> pending;

int publish_pending(const std::string& path) {
  if (path.size() >= pending_slot{}.path.size()) return -1;
  for (std::size_t i = 0; i < pending.size(); ++i) {
    int expected = pending_slot::free;
    if (!pending[i].state.compare_exchange_strong(expected, pending_slot::filling)) continue;
    std::memcpy(pending[i].path.data(), path.c_str(), path.size() + 1);
    pending[i].state.store(pending_slot::published, std::memory_order_release);
    return static_cast<int>(i);
  }
  return -1;
}

void withdraw_pending(int slot) {
  if (slot >= 0) pending[static_cast<std::size_t>(slot)].state.store(pending_slot::free);
}

std::string reason(int error_number) {
  return std::strerror(error_number);
}

}  // namespace

void remove_unfinished_files() noexcept {
  for (auto& slot : pending) {
    if (slot.state.load(std::memory_order_acquire) == pending_slot::published) {
      ::unlink(slot.path.data());
    }
  }
}

struct atomic_file::state {
  std::filesystem::path target;
  std::string what;
  std::filesystem::path temporary;  // empty: written in place
  int fd = -1;
  int slot = -1;  // in `pending`
  std::optional<fd_buffer> buffer;
  std::ostream out{nullptr};
  bool finished = false;  // committed or abandoned

  [[noreturn]] void fail_to_open(int error_number) const {
    std::string hint;
    const auto folder = target.has_parent_path() ? target.parent_path().string() : ".";
    if (error_number == ENOENT) {
      std::error_code ignored;
      hint = std::filesystem::is_directory(folder, ignored)
                 ? "; the folder '" + folder +
                       "' exists but takes no new files (as /proc): write elsewhere"
                 : "; check that the folder '" + folder + "' exists";
    }
    if (error_number == EACCES || error_number == EPERM)
      hint = "; check that you may write to the folder '" + folder + "'";
    if (error_number == EISDIR) hint = "; give a file name";
    TANDEM_FAIL(io_error, "cannot write the " + what + " file '" + target.string() +
                              "': " + reason(error_number) + hint);
  }
};

atomic_file::atomic_file(const std::filesystem::path& path, std::string what)
    : state_(std::make_unique<state>()) {
  auto& s = *state_;
  s.target = path;
  s.what = std::move(what);
  if (!path.has_filename()) s.fail_to_open(EISDIR);

  struct stat existing {};
  const bool exists = ::lstat(path.c_str(), &existing) == 0;
  bool in_place = exists && !S_ISREG(existing.st_mode);
  if (!in_place) {
    static std::atomic<unsigned> counter{0};
    const auto folder = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
    int error_number = 0;
    for (int attempt = 0; attempt < 100 && s.fd < 0; ++attempt) {
      // Hidden, and named for its target and this process: ".results.json.tmp-PID-N".
      std::string name(1, '.');
      name += path.filename().string();
      name += ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
      s.temporary = folder / name;
      s.fd = ::open(s.temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
      error_number = errno;
      if (s.fd < 0 && error_number != EEXIST) break;
    }
    if (s.fd < 0) {
      s.temporary.clear();
      // A file this process may write in a folder it may not create files in: in place.
      const bool writable_file = exists && ::access(path.c_str(), W_OK) == 0;
      if (!writable_file || (error_number != EACCES && error_number != EPERM)) {
        s.fail_to_open(error_number);
      }
      in_place = true;
    } else {
      s.slot = publish_pending(s.temporary.string());
      // The replacement keeps the permissions of the file it replaces.
      if (exists) static_cast<void>(::fchmod(s.fd, existing.st_mode & 07777));
    }
  }
  if (in_place) {
    s.fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (s.fd < 0) s.fail_to_open(errno);
  }
  s.buffer.emplace(s.fd);
  s.out.rdbuf(&*s.buffer);
}

atomic_file::~atomic_file() {
  abandon();
}

std::ostream& atomic_file::stream() {
  return state_->out;
}

const std::filesystem::path& atomic_file::path() const {
  return state_->target;
}

bool atomic_file::replaces_atomically() const {
  return !state_->temporary.empty();
}

void atomic_file::commit() {
  auto& s = *state_;
  TANDEM_ASSERT(!s.finished, "an atomic_file is committed once, and never after abandon");
  s.out.flush();
  int error_number = s.buffer->error();
  if (error_number == 0 && s.out.bad()) error_number = EIO;
  // Synced before the rename: after a crash the target is the old file or the whole new one.
  if (error_number == 0 && !s.temporary.empty() && ::fsync(s.fd) != 0) error_number = errno;
  if (::close(s.fd) != 0 && error_number == 0 && errno != EINTR) error_number = errno;
  s.fd = -1;
  if (error_number != 0) {
    abandon();
    TANDEM_FAIL(io_error,
                "writing the " + s.what + " to '" + s.target.string() +
                    "' failed: " + reason(error_number) +
                    (s.temporary.empty() ? std::string() : "; the file was left as it was"));
  }
  if (!s.temporary.empty() && ::rename(s.temporary.c_str(), s.target.c_str()) != 0) {
    error_number = errno;
    abandon();
    TANDEM_FAIL(io_error, "cannot put the " + s.what + " file in place at '" + s.target.string() +
                              "': " + reason(error_number));
  }
  withdraw_pending(s.slot);
  s.slot = -1;
  s.finished = true;
}

void atomic_file::abandon() noexcept {
  if (!state_ || state_->finished) return;
  auto& s = *state_;
  if (s.fd >= 0) ::close(s.fd);
  s.fd = -1;
  if (!s.temporary.empty()) ::unlink(s.temporary.c_str());
  withdraw_pending(s.slot);
  s.slot = -1;
  s.finished = true;
}

}  // namespace tandem
