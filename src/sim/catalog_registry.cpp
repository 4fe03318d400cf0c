// The registry. The zoo's models read the options the zoo reads (tandem/models/zoo.hpp:
// model_option_names), in the same order and with the same defaults and lower bounds; the upper
// bounds are the generator's own, there to keep every size within 64-bit byte counts and a
// profile within a few thousand operations.

#include "catalog_registry.hpp"

#include <cmath>

#include "tandem/common/error.hpp"
#include "tandem/common/names.hpp"

namespace tandem::sim::catalog {
namespace {

constexpr std::int64_t max_batch = 65536;
constexpr double max_seed = 9007199254740992.0;  // 2^53: every whole double below is exact

option_spec whole(const std::string& name, double value, double least, double most) {
  option_spec spec;
  spec.name = name;
  spec.default_value = value;
  spec.least = least;
  spec.most = most;
  return spec;
}

std::vector<option_spec> image_options(double side, double least_side, double classes) {
  return {whole("image_side", side, least_side, 4096), whole("channels", 3, 1, 64),
          whole("classes", classes, 2, 1e6)};
}

std::vector<option_spec> sequence_options(double length, double vocabulary) {
  return {whole("sequence_length", length, 1, 16384), whole("vocabulary", vocabulary, 2, 1e6)};
}

option_spec width_multiplier() {
  option_spec spec = whole("width_multiplier", 1.0, 1e-3, 16);
  spec.integral = false;
  return spec;
}

option_spec hidden(double value) {
  return whole("hidden", value, 1, 16384);
}

option_spec layers(double value, double least = 1) {
  return whole("layers", value, least, 256);
}

std::vector<option_spec> with_seed(std::vector<option_spec> options) {
  options.push_back(whole("seed", 0, 0, max_seed));
  return options;
}

std::vector<option_spec> join(std::vector<option_spec> first,
                              const std::vector<option_spec>& more) {
  first.insert(first.end(), more.begin(), more.end());
  return first;
}

/// resnet20/56/110/50 fix their depth (`named`); "resnet" (0) takes it from the options. The
/// zoo's rule and wording.
std::int64_t resnet_depth(std::int64_t named, const model_args& args) {
  const std::int64_t given = args.integer("depth");
  const std::int64_t depth = named != 0 ? named : given;
  if (named != 0) {
    TANDEM_EXPECTS(given == 0 || given == named, config_error,
                   "resnet" + std::to_string(named) + " has depth " + std::to_string(named) +
                       " but the option depth is " + std::to_string(given) +
                       "; leave depth at 0, or use the model 'resnet', which takes its depth "
                       "from the options");
  }
  TANDEM_EXPECTS(depth == 20 || depth == 56 || depth == 110 || depth == 50, config_error,
                 "resnet depth must be 20, 56 or 110 (CIFAR layout, basic blocks) or 50 "
                 "(ImageNet layout, bottleneck blocks), not " +
                     std::to_string(depth) + "; set the option depth to one of them");
  return depth;
}

model_entry resnet(const std::string& name, std::int64_t named) {
  model_entry e;
  e.name = name;
  e.options =
      with_seed(join(image_options(32, 1, 10), {width_multiplier(), whole("depth", 0, 0, 110)}));
  e.check = [named](const model_args& args) { static_cast<void>(resnet_depth(named, args)); };
  e.build = [named](const model_args& args) {
    const std::int64_t depth = resnet_depth(named, args);
    return depth == 50 ? build_resnet50(args) : build_resnet_cifar(args, depth);
  };
  return e;
}

void check_heads(const std::string& model, const model_args& args) {
  const std::int64_t h = args.integer("hidden");
  const std::int64_t heads = args.integer("heads");
  TANDEM_EXPECTS(h % heads == 0, config_error,
                 model + " splits hidden = " + std::to_string(h) + " across heads = " +
                     std::to_string(heads) + ", so heads must divide hidden; change one of them");
}

model_entry vgg16() {
  model_entry e;
  e.name = "vgg16";
  e.options = with_seed(join(image_options(32, 32, 10), {width_multiplier(), hidden(512)}));
  e.check = [](const model_args& args) {
    TANDEM_EXPECTS(args.integer("image_side") % 32 == 0, config_error,
                   "vgg16 halves the image five times, so image_side must be a multiple of 32 "
                   "(32, 64, 224, ...), not " +
                       std::to_string(args.integer("image_side")));
  };
  e.build = build_vgg16;
  return e;
}

model_entry plain(const std::string& name, std::vector<option_spec> options,
                  network (*build)(const model_args&)) {
  model_entry e;
  e.name = name;
  e.options = with_seed(std::move(options));
  e.build = build;
  return e;
}

model_entry with_heads(const std::string& name, double length, double vocabulary, double width,
                       double depth, double heads, network (*build)(const model_args&)) {
  model_entry e = plain(name,
                        join(sequence_options(length, vocabulary),
                             {hidden(width), layers(depth), whole("heads", heads, 1, 1024)}),
                        build);
  e.check = [name](const model_args& args) { check_heads(name, args); };
  return e;
}

model_entry nasnet() {
  model_entry e = plain(
      "nasnet", join(image_options(224, 32, 1000), {layers(4), whole("filters", 1056, 96, 24576)}),
      build_nasnet);
  e.check = [](const model_args& args) {
    TANDEM_EXPECTS(args.integer("filters") % 24 == 0, config_error,
                   "nasnet's filters (the penultimate layer's, 24 x the first cells' filters) "
                   "must be a multiple of 24 (1056 for NASNet-A Mobile, 4032 for Large), not " +
                       std::to_string(args.integer("filters")));
  };
  return e;
}

std::vector<model_entry> make_catalogue() {
  return {
      resnet("resnet20", 20),
      resnet("resnet56", 56),
      resnet("resnet110", 110),
      resnet("resnet50", 50),
      resnet("resnet", 0),
      vgg16(),
      plain("mobilenetv2", join(image_options(32, 1, 10), {width_multiplier()}), build_mobilenetv2),
      plain("mlp", join(image_options(32, 1, 10), {hidden(128), layers(2)}), build_mlp),
      plain("lstm", join(sequence_options(32, 1000), {hidden(128), layers(2)}), build_lstm),
      with_heads("bert_mini", 32, 1000, 128, 2, 2, build_bert_mini),
      plain("inception_v3", image_options(299, 75, 1000), build_inception_v3),
      nasnet(),
      with_heads("bert_base", 128, 30522, 768, 12, 12, build_bert_base),
      plain("gnmt", join(sequence_options(50, 32000), {hidden(1024), layers(4, 2)}), build_gnmt),
      plain("rhn", join(sequence_options(35, 10000), {hidden(830), whole("depth", 10, 1, 64)}),
            build_rhn),
      plain("tacotron",
            {whole("sequence_length", 150, 1, 4096), whole("output_length", 800, 1, 16384),
             whole("vocabulary", 148, 2, 1e6)},
            build_tacotron),
  };
}

/// "22.5", "4096", "0.001": std::to_string without its trailing zeros.
std::string number(double value) {
  std::string text = std::to_string(value);
  if (text.find('.') == std::string::npos) return text;
  text.erase(text.find_last_not_of('0') + 1);
  if (text.back() == '.') text.pop_back();
  return text;
}

std::string range_text(const option_spec& spec) {
  return (spec.integral ? "a whole number from " : "a number from ") + number(spec.least) + " to " +
         number(spec.most);
}

void check_value(const model_entry& entry, const option_spec& spec, double value) {
  const bool whole_enough = !spec.integral || std::floor(value) == value;
  TANDEM_EXPECTS(std::isfinite(value) && whole_enough && value >= spec.least && value <= spec.most,
                 config_error,
                 "model '" + entry.name + "': option " + spec.name + " must be " +
                     range_text(spec) + ", not " + number(value));
}

const option_spec& find_option(const model_entry& entry, const std::string& name) {
  for (const auto& spec : entry.options) {
    if (spec.name == name) return spec;
  }
  const auto known = option_names(entry);
  TANDEM_FAIL(config_error, "model '" + entry.name + "' has no option '" + name +
                                "'; its options: " + join_names(known) + suggest_name(name, known));
}

}  // namespace

const std::vector<model_entry>& catalogue() {
  static const std::vector<model_entry> entries = make_catalogue();
  return entries;
}

std::vector<std::string> option_names(const model_entry& entry) {
  std::vector<std::string> names;
  for (const auto& o : entry.options) names.push_back(o.name);
  return names;
}

const model_entry& find_model(const std::string& name) {
  std::vector<std::string> known;
  for (const auto& e : catalogue()) {
    if (e.name == name) return e;
    known.push_back(e.name);
  }
  TANDEM_FAIL(config_error, "unknown model '" + name + "'; known models: " + join_names(known) +
                                suggest_name(name, known));
}

model_args resolve(const model_entry& entry, const model_request& request) {
  TANDEM_EXPECTS(request.batch_size >= 1 && request.batch_size <= max_batch, config_error,
                 "model '" + entry.name + "': batch size must be from 1 to " +
                     std::to_string(max_batch) + ", not " + std::to_string(request.batch_size));
  std::map<std::string, double> values;
  for (const auto& spec : entry.options) values[spec.name] = spec.default_value;
  for (const auto& [name, value] : request.options) {
    check_value(entry, find_option(entry, name), value);
    values[name] = value;
  }
  model_args args(request.batch_size, std::move(values));
  if (entry.check) entry.check(args);
  return args;
}

}  // namespace tandem::sim::catalog
