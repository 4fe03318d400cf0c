#pragma once
// The profile generator: a model of the catalogue and a batch size turned into one training
// iteration on a GPU spec, as the simulator replays it (sim::job_profile): its operations timed
// by a roofline cost model, the memory it allocates and frees, the tensors it keeps.
//
// The catalogue holds the zoo's models (same architectures, option names and defaults as
// tandem/models/zoo.hpp, so a workload written for `tandem run` simulates as is) and the papers'
// models at their published scale: inception_v3, plain20, squeezenet, nasnet, bert_base, gnmt,
// rhn, tacotron.
// docs/sim-models.md describes the cost model and every model.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tandem/sim/gpu_spec.hpp"
#include "tandem/sim/job_profile.hpp"

namespace tandem::sim {

/// The models generate_profile knows, the zoo's first.
[[nodiscard]] const std::vector<std::string>& generated_model_names();

/// The options `model` reads (their names in workload files); empty for an unknown model.
[[nodiscard]] std::vector<std::string> generated_model_option_names(const std::string& model);

struct model_request {
  std::string model;
  std::int64_t batch_size = 0;
  /// Option name to value; an option left out takes the model's default.
  std::map<std::string, double> options;
  /// "sgd" (with momentum: one state tensor per parameter) or "adam" (two).
  std::string optimizer = "sgd";
};

/// One solo training iteration of `request` on `gpu`. Throws config_error naming the problem and
/// the fix for an unknown model (suggesting the closest), an unknown option (listing the model's
/// options), an option out of range, a batch size below 1 or an unknown optimizer.
[[nodiscard]] job_profile generate_profile(const model_request& request, const gpu_spec& gpu);

/// Throws what generate_profile would for `request`, without timing or laying out anything.
void check_request(const model_request& request);

/// Trainable parameters of `request`'s model (tied weights counted once), what the framework's
/// parameter count would say. Validates as generate_profile does.
[[nodiscard]] std::int64_t parameter_count(const model_request& request);

}  // namespace tandem::sim
