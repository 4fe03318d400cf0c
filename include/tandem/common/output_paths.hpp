#pragma once
// A command's output files checked against each other and against the file it reads, before
// anything runs: `--json r.json --timeline r.json` would leave only the timeline, and `--json
// w.toml` would replace the workload with results.

#include <initializer_list>
#include <string>
#include <string_view>

namespace tandem {

/// One file a command writes, and the option that names it ("--json"); an empty path writes
/// nothing and is not checked.
struct output_path {
  std::string_view option;
  std::string_view path;
};

/// Throws config_error naming both options where two of `outputs` are one file, or where one of
/// them is one of `inputs` (the files the command reads: a workload, results), whatever the
/// spelling ("./r.json", a link).
void check_output_paths(std::initializer_list<std::string_view> inputs,
                        std::initializer_list<output_path> outputs);

}  // namespace tandem
