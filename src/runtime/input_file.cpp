#include "tandem/runtime/input_file.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <system_error>

#include "tandem/common/error.hpp"
#include "tandem/common/units.hpp"

namespace tandem::runtime {
namespace {

namespace fs = std::filesystem;

/// What a path that is not a regular file is, in words; nullptr for what may be read.
const char* what_else(fs::file_type type) {
  switch (type) {
    case fs::file_type::regular:
      return nullptr;
    case fs::file_type::directory:
      return "is a directory";
    case fs::file_type::character:
      return "is a character device (as /dev/zero is), not a regular file";
    case fs::file_type::block:
      return "is a block device, not a regular file";
    case fs::file_type::fifo:
      return nullptr;  // a pipe (`tandem run <(make_workload)`): read like a file, to the cap
    case fs::file_type::socket:
      return "is a socket, not a regular file";
    default:
      return "is not a regular file";
  }
}

/// `size`: what stat said, if it said.
[[noreturn]] void too_large(const fs::path& path, const input_file_kind& kind,
                            std::optional<std::size_t> size) {
  throw config_error("the " + std::string(kind.what) + " '" + path.string() + "' holds " +
                     (size ? format_bytes(*size) + ", more than" : std::string("more than")) +
                     " the " + format_bytes(kind.max_bytes) + " tandem reads from one; " +
                     kind.hint);
}

}  // namespace

std::ifstream open_input_file(const fs::path& path, const input_file_kind& kind) {
  const std::string named = std::string(kind.what) + " '" + path.string() + "'";
  std::error_code error;
  const auto status = fs::status(path, error);
  if (error || !fs::exists(status)) {
    throw config_error("cannot open the " + named + ": " +
                       (error ? error.message() : std::string("it does not exist")) + "; " +
                       kind.hint);
  }
  if (const char* other = what_else(status.type())) {
    throw config_error("cannot read the " + named + ": it " + other + "; " + kind.hint);
  }
  std::ifstream file(path, std::ios::binary);
  if (!file.good()) {
    throw config_error("cannot open the " + named + ": " + std::strerror(errno) + "; " + kind.hint);
  }
  return file;
}

std::string read_input_file(const fs::path& path, const input_file_kind& kind) {
  const std::string named = std::string(kind.what) + " '" + path.string() + "'";
  std::error_code error;
  const auto size = fs::file_size(path, error);
  if (!error && size > kind.max_bytes) too_large(path, kind, size);
  auto file = open_input_file(path, kind);
  // At most one byte past the cap, whatever stat said: the file may grow while it is read.
  std::string text;
  char chunk[64 * 1024];
  while (text.size() <= kind.max_bytes) {
    const auto wanted = std::min(sizeof chunk, kind.max_bytes + 1 - text.size());
    file.read(chunk, static_cast<std::streamsize>(wanted));
    text.append(chunk, static_cast<std::size_t>(file.gcount()));
    if (!file) break;
  }
  if (file.bad()) {
    throw config_error("cannot read the " + named + ": " + std::strerror(errno) + "; " + kind.hint);
  }
  if (text.size() > kind.max_bytes) too_large(path, kind, std::nullopt);
  return text;
}

}  // namespace tandem::runtime
