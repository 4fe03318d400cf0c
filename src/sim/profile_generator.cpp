// The generator's entry points: the registry finds and checks the model, its builder describes
// the network, the lowering times it on the GPU and lays out its memory (or the access sequence
// tells the same iteration tensor by tensor).

#include "tandem/sim/profile_generator.hpp"

#include "catalog_lowering.hpp"
#include "catalog_registry.hpp"
#include "catalog_sequence.hpp"
#include "catalog_tensorflow.hpp"
#include "tandem/common/error.hpp"
#include "tandem/sim/sequence_generator.hpp"

namespace tandem::sim {
namespace {

catalog::optimizer_kind optimizer_of(const std::string& name) {
  if (name == "sgd") return catalog::optimizer_kind::sgd;
  if (name == "adam") return catalog::optimizer_kind::adam;
  TANDEM_FAIL(config_error,
              "unknown optimizer '" + name + "'; known optimizers: sgd (with momentum), adam");
}

/// Byte counts are 64-bit integers; a request beyond this is far beyond any GPU anyway.
constexpr double max_iteration_bytes = 0x1p53;

catalog::network network_of(const model_request& request) {
  const auto& entry = catalog::find_model(request.model);
  const auto args = catalog::resolve(entry, request);
  auto net = entry.build(args);
  const auto& values = args.values();
  if (const auto it = values.find("framework"); it != values.end() && it->second == 1) {
    catalog::lower_as_tensorflow1(net, entry.l2_weight_decay);
  }
  // Per-layer sizes fit (the registry bounds every option); their sum over many layers might not.
  TANDEM_EXPECTS(catalog::bytes_upper_bound(net) < max_iteration_bytes, config_error,
                 "model '" + request.model + "' at batch size " +
                     std::to_string(request.batch_size) +
                     " with these options would need petabytes of memory per iteration; "
                     "reduce the batch size or the layer sizes");
  return net;
}

}  // namespace

const std::vector<std::string>& generated_model_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> all;
    for (const auto& e : catalog::catalogue()) all.push_back(e.name);
    return all;
  }();
  return names;
}

std::vector<std::string> generated_model_option_names(const std::string& model) {
  for (const auto& e : catalog::catalogue()) {
    if (e.name == model) return catalog::option_names(e);
  }
  return {};
}

job_profile generate_profile(const model_request& request, const gpu_spec& gpu) {
  const auto optimizer = optimizer_of(request.optimizer);
  return catalog::lower(network_of(request), request.model, optimizer, gpu);
}

footprint::access_sequence generate_access_sequence(const model_request& request,
                                                    const gpu_spec& gpu) {
  const auto optimizer = optimizer_of(request.optimizer);
  return catalog::access_sequence_of(network_of(request), request.model, optimizer, gpu);
}

void check_request(const model_request& request) {
  static_cast<void>(optimizer_of(request.optimizer));
  static_cast<void>(network_of(request));
}

std::int64_t parameter_count(const model_request& request) {
  return catalog::parameter_count(network_of(request));
}

}  // namespace tandem::sim
