// The registry. The zoo's models read the zoo's option table (tandem/models/option_ranges.hpp):
// the same options, order, defaults, ranges and rules as `tandem run`. The papers' models have
// ranges of their own, there to keep every size within 64-bit byte counts and a profile within
// a few thousand operations.

#include "catalog_registry.hpp"

#include "tandem/common/error.hpp"
#include "tandem/common/names.hpp"
#include "tandem/runtime/workload_limits.hpp"

namespace tandem::sim::catalog {
namespace {

constexpr std::int64_t max_batch = runtime::max_batch_size;
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

/// A model of the zoo: its options and rules from the zoo's table.
model_entry zoo_model(const std::string& name, network (*build)(const model_args&)) {
  model_entry e;
  e.name = name;
  e.options = *models::zoo_option_ranges(name);
  e.check = [name](const model_args& args) { models::check_option_rules(name, args.values()); };
  e.build = build;
  return e;
}

model_entry resnet(const std::string& name) {
  model_entry e = zoo_model(name, nullptr);
  e.build = [name](const model_args& args) {
    const std::int64_t depth = models::resnet_depth(name, args.integer("depth"));
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

/// The papers' models: `framework` 1 lowers them as TensorFlow 1.x issues them
/// (catalog_tensorflow.hpp), as the papers trained them; 0 is PyTorch's eager lowering.
model_entry plain(const std::string& name, std::vector<option_spec> options,
                  network (*build)(const model_args&)) {
  model_entry e;
  e.name = name;
  options.push_back(whole("framework", 0, 0, 1));
  e.options = with_seed(std::move(options));
  e.build = build;
  return e;
}

/// An image model of the papers: trained with L2 weight decay in TensorFlow 1.x.
model_entry image_model(const std::string& name, std::vector<option_spec> options,
                        network (*build)(const model_args&)) {
  model_entry e = plain(name, std::move(options), build);
  e.l2_weight_decay = true;
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
  model_entry e = image_model(
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
      resnet("resnet20"),
      resnet("resnet56"),
      resnet("resnet110"),
      resnet("resnet50"),
      resnet("resnet"),
      zoo_model("vgg16", build_vgg16),
      zoo_model("mobilenetv2", build_mobilenetv2),
      zoo_model("mlp", build_mlp),
      zoo_model("lstm", build_lstm),
      zoo_model("bert_mini", build_bert_mini),
      image_model("inception_v3", image_options(299, 75, 1000), build_inception_v3),
      image_model("plain20", image_options(32, 1, 10), build_plain20),
      // SqueezeNet's stride-2 convolution and three ceil-mode pools take 17 px to 8, 4, 2 and 1;
      // from 16 px the third pool would get a 1-pixel map, smaller than its window.
      image_model("squeezenet", image_options(32, 17, 10), build_squeezenet),
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

const option_spec& find_option(const model_entry& entry, const std::string& name) {
  for (const auto& spec : entry.options) {
    if (spec.name == name) return spec;
  }
  const auto known = option_names(entry);
  TANDEM_FAIL(config_error, "model '" + entry.name + "' has no option '" + name + "'" +
                                suggest_name(name, known) + " (its options: " + join_names(known) +
                                ")");
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
    models::check_option_value(entry.name, find_option(entry, name), value);
    values[name] = value;
  }
  model_args args(request.batch_size, std::move(values));
  if (entry.check) entry.check(args);
  return args;
}

}  // namespace tandem::sim::catalog
