// The zoo's registry: names to architectures and tasks, and the checks every option must pass
// before an architecture sees it.

#include "tandem/models/zoo.hpp"

#include <ATen/CPUGeneratorImpl.h>

#include <functional>
#include <map>
#include <mutex>

#include "networks.hpp"
#include "tandem/common/error.hpp"
#include "tandem/models/option_ranges.hpp"

namespace tandem::models {
namespace {

using namespace detail;

/// A model's architecture and task; the options it reads are the option table's
/// (tandem/models/option_ranges.hpp), shared with the simulator.
struct entry {
  const char* name;
  std::function<std::shared_ptr<network>(const model_options&)> build;
  std::function<std::unique_ptr<task>(const model_options&)> objective;
};

/// resnet20/56/110/50 fix their depth; "resnet" takes it from the options (option_ranges.hpp).
std::shared_ptr<network> build_resnet(const std::string& name, const model_options& options) {
  const std::int64_t depth = resnet_depth(name, options.depth);
  return depth == 50 ? make_resnet50(options) : make_resnet_cifar(options, depth);
}

const std::vector<entry>& registry() {
  const auto resnet = [](const char* name) -> entry {
    return {name, [name](const auto& o) { return build_resnet(name, o); }, make_image_task};
  };
  static const std::vector<entry> entries = {
      resnet("resnet20"),
      resnet("resnet56"),
      resnet("resnet110"),
      resnet("resnet50"),
      resnet("resnet"),
      {"vgg16", make_vgg16, make_image_task},
      {"mobilenetv2", make_mobilenetv2, make_image_task},
      {"mlp", make_mlp, make_image_task},
      {"lstm", make_lstm, make_next_token_task},
      {"bert_mini", make_bert_mini, make_masked_token_task},
  };
  return entries;
}

/// The whole-number field a workload calls `option`.
std::int64_t model_options::*whole_field(const std::string& option) {
  static const std::map<std::string, std::int64_t model_options::*> fields{
      {"image_side", &model_options::image_side},
      {"channels", &model_options::channels},
      {"classes", &model_options::classes},
      {"sequence_length", &model_options::sequence_length},
      {"vocabulary", &model_options::vocabulary},
      {"hidden", &model_options::hidden},
      {"layers", &model_options::layers},
      {"heads", &model_options::heads},
      {"depth", &model_options::depth}};
  const auto found = fields.find(option);
  TANDEM_ASSERT(found != fields.end(), "every option of the table is a field of model_options");
  return found->second;
}

/// The fields `ranges` names, as the option table's numbers.
option_values values_of(const std::vector<option_range>& ranges, const model_options& options) {
  option_values values;
  for (const auto& range : ranges) {
    if (range.name == "width_multiplier") {
      values[range.name] = options.width_multiplier;
    } else if (range.name == "seed") {
      values[range.name] = static_cast<double>(options.seed);
    } else {
      values[range.name] = static_cast<double>(options.*whole_field(range.name));
    }
  }
  return values;
}

/// Checks the fields the model reads against the option table it shares with the simulator;
/// each architecture checks what only its layers can (bert_mini's heads dividing hidden again).
void check(const entry& e, const model_options& options) {
  const auto* ranges = zoo_option_ranges(e.name);
  TANDEM_ASSERT(ranges != nullptr, "every model of the zoo has a row in the option table");
  check_zoo_options(e.name, values_of(*ranges, options));
}

/// Seeds libtorch's default CPU generator (which the layers' initialisers draw from) for the
/// duration of a build, and restores its state after, so that a model's initial weights depend
/// on its seed alone. Builds are serialised; a thread drawing from the default generator during
/// a build (none of the zoo's models does in training) would perturb both.
class seeded_initialisation {
 public:
  explicit seeded_initialisation(std::uint64_t seed)
      : lock_(mutex()), generator_(at::detail::getDefaultCPUGenerator()) {
    std::lock_guard<std::mutex> guard(generator_.mutex());
    saved_ = generator_.get_state();
    generator_.set_current_seed(seed);
  }
  ~seeded_initialisation() {
    std::lock_guard<std::mutex> guard(generator_.mutex());
    generator_.set_state(saved_);
  }
  seeded_initialisation(const seeded_initialisation&) = delete;
  seeded_initialisation& operator=(const seeded_initialisation&) = delete;

 private:
  static std::mutex& mutex() {
    static std::mutex builds;
    return builds;
  }
  std::unique_lock<std::mutex> lock_;
  at::Generator generator_;
  at::Tensor saved_;
};

}  // namespace

std::vector<std::string> model_names() {
  std::vector<std::string> names;
  for (const auto& e : registry()) names.emplace_back(e.name);
  return names;
}

std::vector<std::string> model_option_names(const std::string& name) {
  const auto* ranges = zoo_option_ranges(name);
  return ranges != nullptr ? option_names(*ranges) : std::vector<std::string>{};
}

model_options default_options(const std::string& name) {
  model_options options;
  if (const auto* ranges = zoo_option_ranges(name)) {
    for (const auto& range : *ranges) set_option(options, range.name, range.default_value);
  }
  return options;
}

void set_option(model_options& options, const std::string& option, double value) {
  if (option == "width_multiplier") {
    options.width_multiplier = value;
  } else if (option == "seed") {
    options.seed = static_cast<std::uint64_t>(value);
  } else {
    options.*whole_field(option) = static_cast<std::int64_t>(value);
  }
}

void check_model_options(const std::string& name, const model_options& options) {
  for (const auto& e : registry()) {
    if (name == e.name) return check(e, options);
  }
  TANDEM_FAIL(
      config_error, "unknown model '" + name + "'; known models: " + [] {
        std::string known;
        for (const auto& e : registry()) known += (known.empty() ? "" : ", ") + std::string(e.name);
        return known;
      }());
}

std::unique_ptr<model> make_model(const std::string& name, const model_options& options) {
  for (const auto& e : registry()) {
    if (name != e.name) continue;
    check(e, options);
    std::shared_ptr<network> layers;
    {
      seeded_initialisation seeded(options.seed);
      layers = e.build(options);
    }
    return std::make_unique<model>(name, options, std::move(layers), e.objective(options));
  }
  std::string known;
  for (const auto& e : registry()) known += (known.empty() ? "" : ", ") + std::string(e.name);
  TANDEM_FAIL(config_error, "unknown model '" + name + "'; known models: " + known);
}

}  // namespace tandem::models
