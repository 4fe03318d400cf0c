#pragma once
// The timeline CSV of a run under way, reduced for its report as it is written (`tandem run
// --report`, `tandem sim --report`): a real run writes a row per allocation, gigabytes in an hour,
// and the report needs only the buckets (Note [Timeline buckets]). What is written goes on, as it
// is, to the --timeline file when there is one; nothing of it is kept but the buckets.

#include <array>
#include <cstddef>
#include <ostream>
#include <streambuf>
#include <string>
#include <vector>

#include "tandem/report/memory_timeline.hpp"

namespace tandem::report {

class timeline_stream final : public std::ostream {
 public:
  /// `job_order`: the jobs' order in the results. `copy`: where the text goes on to (nullptr:
  /// nowhere); it must outlive this stream.
  timeline_stream(std::string source, const std::vector<std::string>& job_order, std::ostream* copy,
                  std::size_t buckets = 1500);
  timeline_stream(const timeline_stream&) = delete;
  timeline_stream& operator=(const timeline_stream&) = delete;

  /// The timeline over [0, max(end_s, the last row's time)]; what was written is flushed first.
  [[nodiscard]] memory_timeline finish(double end_s);

 private:
  class buffer final : public std::streambuf {
   public:
    buffer(timeline_reader& reader, std::ostream* copy);
    /// Hands what the put area holds to the reader and the copy.
    void drain();

   protected:
    int_type overflow(int_type c) override;
    int sync() override;

   private:
    timeline_reader& reader_;
    std::ostream* copy_;
    std::array<char, 64 * 1024> area_{};
  };

  timeline_reader reader_;
  buffer buffer_;
};

}  // namespace tandem::report
