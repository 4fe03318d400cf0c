#pragma once
// A policy's options as workload files ([policy] tables) and `--set KEY=VALUE` give them: each
// one's name, default, allowed range, unit and help, bound to a field of the policy's typed
// options struct (scrooge_options, nodegroup_options). One table parses the numbers, refuses a
// bad one with words that name the policy, the option, the value and the range, and documents
// the options (`tandem policies`, the README's table, which a test holds to it).

#include <cstddef>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace tandem::schedule {

/// The values an option takes.
struct value_range {
  double least = 0;
  double most = std::numeric_limits<double>::infinity();  ///< infinity: no bound, but finite
  bool above_least = false;                               ///< `least` itself is refused
};

/// One option of a policy, as users see it.
struct option_spec {
  std::string name;
  double default_value = 0;
  value_range range;
  bool whole = false;  ///< a whole number
  std::string unit;    ///< "MiB"; empty for a count or a fraction
  std::string help;    ///< one line: what it changes

  /// The default as the registry prints it ("0.8", "10").
  [[nodiscard]] std::string default_text() const;
  /// "above 0 and at most 1", "a whole number from 1 to 1024", "from 0 to 1048576 MiB".
  [[nodiscard]] std::string range_text() const;
  [[nodiscard]] bool allows(double value) const;
};

/// A number as the registry prints it: its shortest form up to 15 digits ("0.8", "1000000").
[[nodiscard]] std::string format_option_number(double value);

/// Throws config_error "POLICY: NAME must be RANGE, not VALUE (HELP)" unless spec allows value.
void check_option(std::string_view policy, const option_spec& spec, double value);

/// The options of policy `policy`, bound to the fields of its options struct `Options`.
template <typename Options>
class option_table {
 public:
  explicit option_table(std::string policy) : policy_(std::move(policy)) {}

  /// Binds option `name` to `field`: a given value v sets the field to v x `scale` (a field in
  /// bytes given in MiB), and the default is what Options{} holds there, divided by `scale`. An
  /// integer field given as it is (no scale) takes whole numbers only.
  template <typename Field>
  option_table& bind(std::string name, Field Options::*field, value_range range, std::string unit,
                     std::string help, double scale = 1) {
    static_assert(std::is_arithmetic_v<Field>, "an option is a number");
    option_spec spec;
    spec.name = std::move(name);
    spec.default_value = static_cast<double>(Options{}.*field) / scale;
    spec.range = range;
    spec.whole = std::is_integral_v<Field> && scale == 1;
    spec.unit = std::move(unit);
    spec.help = std::move(help);
    specs_.push_back(std::move(spec));
    setters_.push_back([field, scale](Options& options, double value) {
      options.*field = static_cast<Field>(value * scale);
    });
    return *this;
  }

  [[nodiscard]] const std::string& policy() const { return policy_; }
  [[nodiscard]] const std::vector<option_spec>& specs() const { return specs_; }

  /// Options{} with every option of this table that `given` names, each value checked first
  /// (check_option). Names the table does not know are left alone: the callers check names
  /// where they can point at the line or flag that wrote them.
  [[nodiscard]] Options parse(const std::map<std::string, double>& given) const {
    Options options;
    for (std::size_t i = 0; i < specs_.size(); ++i) {
      const auto found = given.find(specs_[i].name);
      if (found == given.end()) continue;
      check_option(policy_, specs_[i], found->second);
      setters_[i](options, found->second);
    }
    return options;
  }

 private:
  std::string policy_;
  std::vector<option_spec> specs_;                              // in the order users see them
  std::vector<std::function<void(Options&, double)>> setters_;  // by spec
};

}  // namespace tandem::schedule
