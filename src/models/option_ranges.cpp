// The zoo's option table: which options each model reads, their defaults and ranges, and the
// rules between them. The zoo (zoo.cpp), the simulator's catalogue (sim/catalog_registry.cpp)
// and the workload validation (runtime/workload_validation.cpp) all read this one table.

#include "tandem/models/option_ranges.hpp"

#include <cmath>
#include <utility>

#include "tandem/common/error.hpp"
#include "tandem/common/names.hpp"

namespace tandem::models {
namespace {

constexpr double max_seed = 9007199254740992.0;  // 2^53: every whole double below is exact

option_range whole(const std::string& name, double value, double least, double most) {
  return {name, value, least, most, true};
}

std::vector<option_range> image_options(double least_side) {
  return {whole("image_side", 32, least_side, 4096), whole("channels", 3, 1, 64),
          whole("classes", 10, 2, 1e6)};
}

std::vector<option_range> sequence_options() {
  return {whole("sequence_length", 32, 1, 16384), whole("vocabulary", 1000, 2, 1e6)};
}

option_range width_multiplier() {
  return {"width_multiplier", 1.0, 1e-3, 16, false};
}

/// `first`, then `more`, then the seed every model reads last.
std::vector<option_range> with_seed(std::vector<option_range> first,
                                    const std::vector<option_range>& more) {
  first.insert(first.end(), more.begin(), more.end());
  first.push_back(whole("seed", 0, 0, max_seed));
  return first;
}

using table = std::vector<std::pair<std::string, std::vector<option_range>>>;

/// The zoo's models in its order (tandem/models/zoo.hpp), each with the options it reads.
const table& zoo_table() {
  static const table entries = [] {
    const auto resnet =
        with_seed(image_options(1), {width_multiplier(), whole("depth", 0, 0, 110)});
    const auto sizes =
        std::vector<option_range>{whole("hidden", 128, 1, 16384), whole("layers", 2, 1, 256)};
    auto with_heads = sizes;
    with_heads.push_back(whole("heads", 2, 1, 1024));
    return table{
        {"resnet20", resnet},
        {"resnet56", resnet},
        {"resnet110", resnet},
        {"resnet50", resnet},
        {"resnet", resnet},
        // The classifier's width: 512 as the CIFAR variants, 4096 for ImageNet's VGG-16.
        {"vgg16",
         with_seed(image_options(32), {width_multiplier(), whole("hidden", 512, 1, 16384)})},
        {"mobilenetv2", with_seed(image_options(1), {width_multiplier()})},
        {"mlp", with_seed(image_options(1), sizes)},
        {"lstm", with_seed(sequence_options(), sizes)},
        {"bert_mini", with_seed(sequence_options(), with_heads)},
    };
  }();
  return entries;
}

/// "22.5", "4096", "0.001": std::to_string without its trailing zeros.
std::string number(double value) {
  if (std::isfinite(value) && std::floor(value) == value && std::abs(value) < 1e18) {
    return std::to_string(static_cast<std::int64_t>(value));
  }
  std::string text = std::to_string(value);
  if (text.find('.') == std::string::npos) return text;
  text.erase(text.find_last_not_of('0') + 1);
  if (text.back() == '.') text.pop_back();
  return text;
}

std::int64_t whole_value(const option_values& values, const std::string& name) {
  return static_cast<std::int64_t>(values.at(name));
}

}  // namespace

const std::vector<option_range>* zoo_option_ranges(const std::string& model) {
  for (const auto& [name, ranges] : zoo_table()) {
    if (name == model) return &ranges;
  }
  return nullptr;
}

std::vector<std::string> option_names(const std::vector<option_range>& ranges) {
  std::vector<std::string> names;
  for (const auto& range : ranges) names.push_back(range.name);
  return names;
}

void check_option_value(const std::string& model, const option_range& range, double value) {
  const bool whole_enough = !range.integral || std::floor(value) == value;
  TANDEM_EXPECTS(
      std::isfinite(value) && whole_enough && value >= range.least && value <= range.most,
      config_error,
      "model '" + model + "': option " + range.name + " must be " +
          (range.integral ? "a whole number from " : "a number from ") + number(range.least) +
          " to " + number(range.most) + ", not " + number(value));
}

std::int64_t resnet_depth(const std::string& model, std::int64_t depth_option) {
  const std::int64_t named = model == "resnet" ? 0 : std::stoll(model.substr(6));
  const std::int64_t depth = named != 0 ? named : depth_option;
  if (named != 0) {
    TANDEM_EXPECTS(depth_option == 0 || depth_option == named, config_error,
                   model + " has depth " + std::to_string(named) + " but model_options.depth is " +
                       std::to_string(depth_option) +
                       "; leave depth at 0, or use the model 'resnet', which takes its depth "
                       "from the options");
  }
  TANDEM_EXPECTS(depth == 20 || depth == 56 || depth == 110 || depth == 50, config_error,
                 "resnet depth must be 20, 56 or 110 (CIFAR layout, basic blocks) or 50 "
                 "(ImageNet layout, bottleneck blocks), not " +
                     std::to_string(depth) + "; set model_options.depth to one of them");
  return depth;
}

void check_option_rules(const std::string& model, const option_values& values) {
  if (model.starts_with("resnet")) {
    static_cast<void>(resnet_depth(model, whole_value(values, "depth")));
  } else if (model == "vgg16") {
    const auto side = whole_value(values, "image_side");
    TANDEM_EXPECTS(side % 32 == 0, config_error,
                   "vgg16 halves the image five times, so image_side must be a multiple of 32 "
                   "(32, 64, 224, ...), not " +
                       std::to_string(side));
  } else if (values.contains("heads")) {
    const auto hidden = whole_value(values, "hidden");
    const auto heads = whole_value(values, "heads");
    TANDEM_EXPECTS(hidden % heads == 0, config_error,
                   model + " splits hidden = " + std::to_string(hidden) + " across heads = " +
                       std::to_string(heads) + ", so heads must divide hidden; change one of them");
  }
}

void check_zoo_options(const std::string& model, const option_values& values) {
  const auto* ranges = zoo_option_ranges(model);
  if (ranges == nullptr) {
    std::vector<std::string> known;
    for (const auto& entry : zoo_table()) known.push_back(entry.first);
    TANDEM_FAIL(config_error, "unknown model '" + model + "'" + suggest_name(model, known) +
                                  " (known models: " + join_names(known) + ")");
  }
  const auto names = option_names(*ranges);
  option_values resolved;
  for (const auto& range : *ranges) resolved[range.name] = range.default_value;
  for (const auto& [name, value] : values) {
    const auto at = resolved.find(name);
    TANDEM_EXPECTS(at != resolved.end(), config_error,
                   "model '" + model + "' has no option '" + name + "'" +
                       suggest_name(name, names) + " (its options: " + join_names(names) + ")");
    for (const auto& range : *ranges) {
      if (range.name == name) check_option_value(model, range, value);
    }
    at->second = value;
  }
  check_option_rules(model, resolved);
}

}  // namespace tandem::models
