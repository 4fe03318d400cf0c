#include "policies_command.hpp"

#include <iomanip>
#include <ostream>
#include <string>

#include "tandem/common/error.hpp"
#include "tandem/common/names.hpp"
#include "tandem/schedule/registry.hpp"

namespace tandem::cli {
namespace {

void print_policy(std::ostream& out, const schedule::policy_entry& entry) {
  out << std::left << std::setw(11) << entry.name << ' ' << entry.description << '\n';
  for (const auto& option : entry.options) {
    const std::string unit = option.unit.empty() ? "" : " " + option.unit;
    out << "    " << std::left << std::setw(20) << option.name << " default "
        << option.default_text() << unit << ", " << option.range_text() << ": " << option.help
        << '\n';
  }
}

}  // namespace

int list_policies_command(const policies_command_options& options, std::ostream& out) {
  if (!options.only.empty()) {
    const auto* entry = schedule::find_policy(options.only);
    const auto& known = schedule::policy_names();
    TANDEM_EXPECTS(entry != nullptr, config_error,
                   "unknown policy '" + options.only + "'" + suggest_name(options.only, known) +
                       " (known: " + join_names(known) + ")");
    print_policy(out, *entry);
    return 0;
  }
  out << "policies: a workload's [policy] name (its options as keys of the same table), or "
         "--policy; options also from maxbatch's --set KEY=VALUE\n";
  for (const auto& entry : schedule::policy_entries()) print_policy(out, entry);
  out << "(tandem sim also runs mps-um: every job at once under MPS with unified memory)\n";
  return 0;
}

}  // namespace tandem::cli
