#include "tandem/common/error.hpp"

#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace tandem {

namespace {
std::string_view short_path(const char* file) {
  std::string_view path(file);
  // Keep the path from the project's top folders so that messages do not leak build machines.
  for (std::string_view top : {"include/", "src/", "tests/", "bench/"}) {
    if (auto at = path.rfind(top); at != std::string_view::npos) return path.substr(at);
  }
  return path;
}
}  // namespace

std::string error::location() const {
  if (file_ == nullptr) return {};
  return std::string(short_path(file_)) + ':' + std::to_string(line_);
}

namespace detail {

void assertion_failed(const char* condition, const char* file, int line,
                      const std::string& message) {
  std::fprintf(stderr, "tandem internal error: %s (%s) at %s:%d\n", message.c_str(), condition,
               std::string(short_path(file)).c_str(), line);
  std::abort();
}

}  // namespace detail
}  // namespace tandem
