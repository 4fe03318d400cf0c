#pragma once
// Reading an input file (a workload, profiles) whole, bounded: only a regular file, and no more
// than its cap, checked before reading and while reading, so that /dev/zero, a pipe or the
// wrong file gets a message instead of filling memory. A file whose reader takes it in pieces, in
// memory that does not grow with it (a timeline), is opened with the same checks and no cap.

#include <cstddef>
#include <filesystem>
#include <fstream>
#include <string>

namespace tandem::runtime {

struct input_file_kind {
  const char* what;       ///< "workload file", for messages
  std::size_t max_bytes;  ///< the most it may hold
  const char* hint;       ///< where to find a good one, ending each message
};

/// The file's contents. Throws config_error naming the file and the problem: it does not exist
/// or cannot be opened, it is a directory, a device or a socket rather than a regular file or
/// a pipe, or it holds more than `kind.max_bytes`.
[[nodiscard]] std::string read_input_file(const std::filesystem::path& path,
                                          const input_file_kind& kind);

/// The file, open for reading in pieces. Throws config_error as read_input_file does, but for the
/// cap, which the reader enforces as it sees fit.
[[nodiscard]] std::ifstream open_input_file(const std::filesystem::path& path,
                                            const input_file_kind& kind);

}  // namespace tandem::runtime
