#include <algorithm>
#include <functional>

#include "planner_support.hpp"
#include "tandem/common/error.hpp"
#include "tandem/common/names.hpp"
#include "tandem/footprint/planner.hpp"

namespace tandem::footprint {

namespace {

struct planner_entry {
  std::string name;
  std::function<std::unique_ptr<planner>()> make;
};

/// In the order `tandem plan` lists them: the baseline, then the papers by how much they do.
const std::vector<planner_entry>& entries() {
  static const std::vector<planner_entry> all{
      {"none", detail::make_none_planner},
      {"vdnn-all", [] { return detail::make_vdnn_planner(false); }},
      {"vdnn-conv", [] { return detail::make_vdnn_planner(true); }},
      {"superneurons", detail::make_superneurons_planner},
      {"checkpoint", detail::make_checkpoint_planner},
      {"capuchin", detail::make_capuchin_planner},
      {"tensile", [] { return detail::make_tensile_planner({}); }},
  };
  return all;
}

}  // namespace

std::vector<std::string> planner_names() {
  std::vector<std::string> names;
  for (const auto& entry : entries()) names.push_back(entry.name);
  return names;
}

std::unique_ptr<planner> make_planner(std::string_view name) {
  const auto& all = entries();
  const auto found = std::find_if(all.begin(), all.end(),
                                  [&](const planner_entry& entry) { return entry.name == name; });
  if (found != all.end()) return found->make();
  const auto names = planner_names();
  TANDEM_FAIL(usage_error, "unknown planner '" + std::string(name) + "'" +
                               suggest_name(name, names) +
                               "; known planners: " + join_names(names));
}

}  // namespace tandem::footprint
