#include "tandem/common/output_paths.hpp"

#include <filesystem>
#include <system_error>
#include <vector>

#include "tandem/common/error.hpp"

namespace tandem {
namespace {

/// The file `path` names, spelled one way: links and dots resolved as far as the path exists.
std::filesystem::path resolved(std::string_view path) {
  // Absolute first: a relative path none of whose parts exists would come back as it is.
  std::error_code error;
  const auto absolute =
      std::filesystem::absolute(std::filesystem::path(path), error).lexically_normal();
  if (error) return std::filesystem::path(path).lexically_normal();
  auto canonical = std::filesystem::weakly_canonical(absolute, error);
  return error ? absolute : canonical;
}

}  // namespace

void check_output_paths(std::initializer_list<std::string_view> inputs,
                        std::initializer_list<output_path> outputs) {
  std::vector<std::pair<std::string_view, std::filesystem::path>> read;
  for (const auto input : inputs) {
    if (!input.empty()) read.emplace_back(input, resolved(input));
  }
  std::vector<std::pair<output_path, std::filesystem::path>> seen;
  for (const auto& output : outputs) {
    if (output.path.empty()) continue;
    const auto file = resolved(output.path);
    for (const auto& [input, input_file] : read) {
      if (input_file == file) {
        TANDEM_FAIL(config_error, std::string(output.option) + " " + std::string(output.path) +
                                      " would overwrite " + std::string(input) +
                                      ", which this command reads: write the output to another "
                                      "file");
      }
    }
    for (const auto& [earlier, earlier_file] : seen) {
      if (earlier_file == file) {
        TANDEM_FAIL(config_error, std::string(output.option) + " " + std::string(output.path) +
                                      " is the file " + std::string(earlier.option) +
                                      " writes too: give each output its own file");
      }
    }
    seen.emplace_back(output, file);
  }
}

}  // namespace tandem
