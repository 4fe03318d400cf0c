// The zoo's registry: names to architectures and tasks, and the checks every option must pass
// before an architecture sees it.

#include "tandem/models/zoo.hpp"

#include <ATen/CPUGeneratorImpl.h>

#include <cmath>
#include <functional>
#include <mutex>

#include "networks.hpp"
#include "tandem/common/error.hpp"

namespace tandem::models {
namespace {

using namespace detail;

enum class family { image, sequence };

/// Which of the size fields an architecture reads (only those are checked).
enum class sizes { none, hidden_and_layers, with_heads };

struct entry {
  const char* name;
  family kind;
  sizes reads;
  std::function<std::shared_ptr<network>(const model_options&)> build;
  std::function<std::unique_ptr<task>(const model_options&)> objective;
};

std::string fixed_depth_message(const std::string& name, std::int64_t depth) {
  return name + " has depth " + name.substr(6) + " but model_options.depth is " +
         std::to_string(depth) + "; leave depth at 0, or use the model 'resnet', which takes " +
         "its depth from the options";
}

/// resnet20/56/110/50 fix their depth (`named_depth`); "resnet" (0) takes it from the options.
std::int64_t resnet_depth(std::int64_t named_depth, const model_options& options) {
  const std::int64_t depth = named_depth != 0 ? named_depth : options.depth;
  if (named_depth != 0) {
    TANDEM_EXPECTS(options.depth == 0 || options.depth == named_depth, config_error,
                   fixed_depth_message("resnet" + std::to_string(named_depth), options.depth));
  }
  TANDEM_EXPECTS(depth == 20 || depth == 56 || depth == 110 || depth == 50, config_error,
                 "resnet depth must be 20, 56 or 110 (CIFAR layout, basic blocks) or 50 "
                 "(ImageNet layout, bottleneck blocks), not " +
                     std::to_string(depth) + "; set model_options.depth to one of them");
  return depth;
}

std::shared_ptr<network> build_resnet(std::int64_t named_depth, const model_options& options) {
  const std::int64_t depth = resnet_depth(named_depth, options);
  return depth == 50 ? make_resnet50(options) : make_resnet_cifar(options, depth);
}

const std::vector<entry>& registry() {
  constexpr auto image = family::image;
  constexpr auto none = sizes::none;
  static const std::vector<entry> entries = {
      {"resnet20", image, none, [](const auto& o) { return build_resnet(20, o); }, make_image_task},
      {"resnet56", image, none, [](const auto& o) { return build_resnet(56, o); }, make_image_task},
      {"resnet110", image, none, [](const auto& o) { return build_resnet(110, o); },
       make_image_task},
      {"resnet50", image, none, [](const auto& o) { return build_resnet(50, o); }, make_image_task},
      {"resnet", image, none, [](const auto& o) { return build_resnet(0, o); }, make_image_task},
      {"vgg16", image, none, make_vgg16, make_image_task},
      {"mobilenetv2", image, none, make_mobilenetv2, make_image_task},
      {"mlp", image, sizes::hidden_and_layers, make_mlp, make_image_task},
      {"lstm", family::sequence, sizes::hidden_and_layers, make_lstm, make_next_token_task},
      {"bert_mini", family::sequence, sizes::with_heads, make_bert_mini, make_masked_token_task},
  };
  return entries;
}

void expect_at_least(const std::string& name, const char* field, std::int64_t value,
                     std::int64_t least) {
  TANDEM_EXPECTS(value >= least, config_error,
                 "model '" + name + "': model_options." + field + " must be at least " +
                     std::to_string(least) + ", not " + std::to_string(value));
}

/// Checks the fields the model reads that need no architecture to judge; each architecture
/// checks what is particular to it (vgg16's image side, bert_mini's heads dividing hidden).
void check(const entry& e, const model_options& options) {
  const std::string name = e.name;
  if (e.kind == family::image) {
    expect_at_least(name, "image_side", options.image_side, 1);
    expect_at_least(name, "channels", options.channels, 1);
    expect_at_least(name, "classes", options.classes, 2);
    TANDEM_EXPECTS(std::isfinite(options.width_multiplier) && options.width_multiplier > 0,
                   config_error,
                   "model '" + name + "': model_options.width_multiplier must be positive, not " +
                       std::to_string(options.width_multiplier));
  } else {
    expect_at_least(name, "sequence_length", options.sequence_length, 1);
    expect_at_least(name, "vocabulary", options.vocabulary, 2);
  }
  if (e.reads != sizes::none) {
    expect_at_least(name, "hidden", options.hidden, 1);
    expect_at_least(name, "layers", options.layers, 1);
  }
  if (e.reads == sizes::with_heads) expect_at_least(name, "heads", options.heads, 1);
  if (name.starts_with("resnet")) {
    static_cast<void>(resnet_depth(name == "resnet" ? 0 : std::stoll(name.substr(6)), options));
  }
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
  for (const auto& e : registry()) {
    if (name != e.name) continue;
    std::vector<std::string> names;
    if (e.kind == family::image) {
      names = {"image_side", "channels", "classes"};
    } else {
      names = {"sequence_length", "vocabulary"};
    }
    if (e.reads == sizes::none) names.emplace_back("width_multiplier");  // the conv nets
    if (name.starts_with("resnet")) names.emplace_back("depth");
    if (e.reads != sizes::none) names.insert(names.end(), {"hidden", "layers"});
    if (e.reads == sizes::with_heads) names.emplace_back("heads");
    names.emplace_back("seed");
    return names;
  }
  return {};
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
