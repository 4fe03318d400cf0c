#pragma once
// `tandem policies`: every registered policy with what it does and its options (default, range,
// help), generated from the registry (no libtorch needed).

#include <iosfwd>
#include <string>

namespace tandem::cli {

struct policies_command_options {
  std::string only;  ///< one policy's name; empty for all of them
};

/// Prints the policies; returns 0. Throws config_error for an unknown name, suggesting the
/// closest.
int list_policies_command(const policies_command_options& options, std::ostream& out);

}  // namespace tandem::cli
