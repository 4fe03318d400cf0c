#pragma once
// The zoo's models and the options each reads, with their defaults and ranges, and the rules
// between options: one table for the zoo (`tandem run`), the simulator's catalogue (`tandem
// sim`) and the workload validation both share, so that a value is refused by all three with
// the same words. No libtorch: library tandem_model_options.
//
// The upper bounds keep every size within 64-bit byte counts and a model within what one
// device can hold; the lower bounds are what the architectures need.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tandem::models {

/// One option a model reads: its name in workload files ([job.model_options]), its default and
/// the values it takes.
struct option_range {
  std::string name;
  double default_value = 0;
  double least = 0;
  double most = 0;
  bool integral = true;  ///< a whole number
};

/// Option values by name, as numbers.
using option_values = std::map<std::string, double>;

/// The options the zoo's model `model` reads, in the zoo's order; nullptr for a model outside
/// the zoo.
[[nodiscard]] const std::vector<option_range>* zoo_option_ranges(const std::string& model);

/// The names in `ranges`, in order.
[[nodiscard]] std::vector<std::string> option_names(const std::vector<option_range>& ranges);

/// Throws config_error "model 'M': option O must be a whole number from A to B, not V" unless
/// `value` is in `range`.
void check_option_value(const std::string& model, const option_range& range, double value);

/// The depth of a ResNet of the zoo: resnet20/56/110/50 fix theirs (the option depth must be 0
/// or the same), "resnet" takes it from the option, which must be 20, 56, 110 or 50. Throws
/// config_error saying which to write.
[[nodiscard]] std::int64_t resnet_depth(const std::string& model, std::int64_t depth_option);

/// The rules between a zoo model's options (a ResNet's depth, vgg16's image side a multiple of
/// 32, bert_mini's heads dividing hidden); `values` holds every option the model reads. Throws
/// config_error naming the rule and what to change.
void check_option_rules(const std::string& model, const option_values& values);

/// Every check of a zoo model's options at once: names (listing the model's options), ranges,
/// rules; an option left out takes its default. Throws config_error; a model outside the zoo
/// is one.
void check_zoo_options(const std::string& model, const option_values& values);

}  // namespace tandem::models
