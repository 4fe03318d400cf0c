#include "tandem/report/timeline_stream.hpp"

#include <string_view>

#include "tandem/common/error.hpp"

namespace tandem::report {

timeline_stream::buffer::buffer(timeline_reader& reader, std::ostream* copy)
    : reader_(reader), copy_(copy) {
  setp(area_.data(), area_.data() + area_.size());
}

void timeline_stream::buffer::drain() {
  const auto size = static_cast<std::size_t>(pptr() - pbase());
  if (size == 0) return;
  // Empty the area first: if the reader refuses the text, it is not handed over again.
  setp(area_.data(), area_.data() + area_.size());
  if (copy_ != nullptr) copy_->write(area_.data(), static_cast<std::streamsize>(size));
  reader_.add(std::string_view(area_.data(), size));
}

timeline_stream::buffer::int_type timeline_stream::buffer::overflow(int_type c) {
  drain();
  if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
  *pptr() = traits_type::to_char_type(c);
  pbump(1);
  return c;
}

int timeline_stream::buffer::sync() {
  drain();
  return copy_ != nullptr && !copy_->flush() ? -1 : 0;
}

timeline_stream::timeline_stream(std::string source, const std::vector<std::string>& job_order,
                                 std::ostream* copy, std::size_t buckets)
    : std::ostream(nullptr),
      reader_(std::move(source), job_order, 0, buckets),
      buffer_(reader_, copy) {
  rdbuf(&buffer_);
}

memory_timeline timeline_stream::finish(double end_s) {
  buffer_.drain();
  // A write the reader refused set badbit (an ostream swallows its buffer's exceptions); the
  // timeline is tandem's own, so that is a fault of tandem's, not a half-drawn picture.
  TANDEM_ASSERT(!bad(), "the run's timeline could not be read back for its report");
  return reader_.finish(end_s);
}

}  // namespace tandem::report
