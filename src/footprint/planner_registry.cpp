#include <algorithm>
#include <functional>
#include <map>
#include <utility>

#include "planner_options.hpp"
#include "planner_support.hpp"
#include "tandem/common/error.hpp"
#include "tandem/common/names.hpp"
#include "tandem/footprint/joint_planner.hpp"
#include "tandem/footprint/planner.hpp"

namespace tandem::footprint {

namespace {

struct planner_entry {
  std::string name;
  std::function<std::unique_ptr<planner>(detail::option_reader&)> make;
  /// "KEY: meaning (default)", for help texts; the keys are what the reader accepts.
  std::vector<std::string> options;
};

/// In the order `tandem plan` lists them: the baseline, the papers by how much they do, then
/// the searches.
const std::vector<planner_entry>& entries() {
  static const std::vector<planner_entry> all{
      {"none", [](auto&) { return detail::make_none_planner(); }, {}},
      {"vdnn-all", [](auto&) { return detail::make_vdnn_planner(false); }, {}},
      {"vdnn-conv", [](auto&) { return detail::make_vdnn_planner(true); }, {}},
      {"superneurons", [](auto&) { return detail::make_superneurons_planner(); }, {}},
      {"checkpoint", [](auto&) { return detail::make_checkpoint_planner(); }, {}},
      {"capuchin", [](auto&) { return detail::make_capuchin_planner(); }, {}},
      {"tensile",
       [](detail::option_reader& options) {
         tensile_options o;
         o.max_swap_ratio = options.real("max_swap_ratio", o.max_swap_ratio, 1e-9, 1);
         o.recompute = options.whole("recompute", 1, 0, 1) == 1;
         o.across = options.whole("across", 1, 0, 1) == 1;
         o.drift = options.real("drift", o.drift, 0, 10);
         o.settle = static_cast<std::size_t>(
             options.whole("settle", static_cast<std::int64_t>(o.settle), 0, 1000));
         return detail::make_tensile_planner(o);
       },
       {"max_swap_ratio: the share of a job's tensors it may swap (1)",
        "recompute: 1 recomputes by MSPS once swaps cannot meet the budget, 0 never (1)",
        "across: 1 swaps parameters and optimizer state across the iteration boundary, 0 "
        "within it only (1)",
        "drift: in tandem run and the API, plan every job again when the operation times "
        "measured under the plans drift by this share of the iteration (0: never) (0.1)",
        "settle: iterations each job measures under a new plan before drift is judged from "
        "them (3)"}},
      {"home", detail::make_home_planner, detail::home_option_help()},
      {"tandem", detail::make_tandem_search_planner, detail::tandem_search_option_help()},
      {"optimal", detail::make_optimal_planner, detail::optimal_option_help()},
  };
  return all;
}

const planner_entry& entry_named(std::string_view name) {
  const auto& all = entries();
  const auto found = std::find_if(all.begin(), all.end(),
                                  [&](const planner_entry& entry) { return entry.name == name; });
  if (found != all.end()) return *found;
  const auto names = planner_spellings();
  TANDEM_FAIL(usage_error, "unknown planner '" + std::string(name) + "'" +
                               suggest_name(name, names) +
                               "; known planners: " + join_names(names));
}

std::string key_of(const std::string& help) {
  return help.substr(0, help.find(':'));
}

}  // namespace

std::vector<std::string> planner_names() {
  std::vector<std::string> names;
  for (const auto& entry : entries()) names.push_back(entry.name);
  return names;
}

std::vector<std::string> planner_spellings() {
  auto names = planner_names();
  names.emplace_back("default");
  return names;
}

std::vector<std::string> planner_option_help(std::string_view name) {
  return entry_named(name).options;
}

std::string_view planner_name_of(std::string_view spec) {
  const auto name = spec.substr(0, spec.find(':'));
  return name == "default" ? default_planner : name;
}

std::unique_ptr<planner> make_planner(std::string_view spec) {
  const auto& entry = entry_named(planner_name_of(spec));
  std::vector<std::string> keys;
  for (const auto& help : entry.options) keys.push_back(key_of(help));
  const auto example =
      entry.options.empty() ? std::string{} : " (e.g. " + entry.name + ":" + keys.front() + "=...)";
  std::map<std::string, std::string, std::less<>> values;
  if (const auto colon = spec.find(':'); colon != std::string_view::npos) {
    const auto given = std::string(spec);
    TANDEM_EXPECTS(!entry.options.empty(), usage_error,
                   "planner '" + entry.name + "' takes no options, but '" + given +
                       "' gives some; name it alone");
    std::string_view rest = spec.substr(colon + 1);
    while (true) {
      const auto comma = rest.find(',');
      const auto item = rest.substr(0, comma);
      const auto equals = item.find('=');
      TANDEM_EXPECTS(equals != std::string_view::npos && equals > 0 && equals + 1 < item.size(),
                     usage_error,
                     "planner '" + given + "': '" + std::string(item) +
                         "' is not KEY=VALUE; write NAME:KEY=VALUE,KEY=VALUE" + example);
      const auto key = std::string(item.substr(0, equals));
      TANDEM_EXPECTS(std::find(keys.begin(), keys.end(), key) != keys.end(), usage_error,
                     "planner '" + entry.name + "' has no option '" + key + "'" +
                         suggest_name(key, keys) + "; its options: " + join_names(keys));
      TANDEM_EXPECTS(values.emplace(key, std::string(item.substr(equals + 1))).second, usage_error,
                     "planner '" + given + "' gives the option '" + key + "' twice; keep one");
      if (comma == std::string_view::npos) break;
      rest = rest.substr(comma + 1);
    }
  }
  detail::option_reader reader(entry.name, std::move(values));
  return entry.make(reader);
}

}  // namespace tandem::footprint
