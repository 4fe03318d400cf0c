#pragma once
// An output file that appears whole or not at all.
//
// What is written goes to a temporary file beside the target (same folder, so the rename stays
// on one file system); commit() flushes it to disk and renames it over the target, so a reader
// sees the old file or the new one, never a part. A file abandoned (an error, an interrupted
// run, the object destroyed without commit) leaves the target as it was. Every failure of a
// write, flush, close or rename is an io_error naming the file and the system's reason
// (strerror): a full disk is never silent.
//
// Special targets (/dev/null, /dev/stdout, a pipe: anything that is not a regular file) and
// symbolic links cannot be replaced by a rename; they are written in place, still with every
// error checked. So is an existing file in a folder this process may not create files in.
//
// Thread safety: one thread writes a file. remove_unfinished_files() may run in a signal
// handler while others write.

#include <filesystem>
#include <memory>
#include <ostream>
#include <string>

namespace tandem {

class atomic_file {
 public:
  /// Opens `path` for writing. `what` names the file in messages ("JSON results",
  /// "timeline"). Throws io_error when the file cannot be made (a missing folder, permission
  /// denied, a folder at the path), with the reason.
  atomic_file(const std::filesystem::path& path, std::string what);
  /// Abandons the file unless it was committed.
  ~atomic_file();
  atomic_file(const atomic_file&) = delete;
  atomic_file& operator=(const atomic_file&) = delete;

  /// Where to write. A failed write sets the stream's badbit; commit() reports it.
  [[nodiscard]] std::ostream& stream();
  /// Flushes, syncs and closes the file and puts it in place of the target. Throws io_error
  /// (the target is then left as it was, the temporary removed).
  void commit();
  /// Drops what was written: the temporary is removed, the target left as it was. Never throws.
  void abandon() noexcept;

  [[nodiscard]] const std::filesystem::path& path() const;
  /// True when writing goes through a temporary file renamed on commit (a regular file).
  [[nodiscard]] bool replaces_atomically() const;

 private:
  struct state;
  std::unique_ptr<state> state_;
};

/// Removes the temporary files of every atomic_file not yet committed or abandoned. Only
/// async-signal-safe calls: for a signal handler about to _exit, so that an interrupted run
/// leaves no stray temporaries behind.
void remove_unfinished_files() noexcept;

}  // namespace tandem
