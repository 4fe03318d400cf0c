#pragma once
// A training job's iteration recorded as a tensor access sequence (TENSILE's; `tandem profile`):
// an access recorder on the job's thread, following the job's pool events through the session's
// memory monitor, with the model's parameters, buffers and optimizer state named.

#include <torch/torch.h>

#include <cstdint>
#include <string>

#include "tandem/footprint/access_sequence.hpp"
#include "tandem/memory/trace.hpp"
#include "tandem/runtime/memory_monitor.hpp"
#include "tandem/torch/access_recorder.hpp"

namespace tandem::runtime::detail {

/// Lives for one iteration on the job's thread: made before it (the recorder subscribes to the
/// job's events), begin() and the step (which marks its phases on recorder()), then end().
class sequence_recording {
 public:
  sequence_recording(memory::device_pool& pool, memory_monitor& monitor, memory::job_id job);
  ~sequence_recording();
  sequence_recording(const sequence_recording&) = delete;
  sequence_recording& operator=(const sequence_recording&) = delete;

  /// Names the module's parameters and buffers (role parameter) and the optimizer's state of
  /// each parameter (SGD's momentum buffer, Adam's moments; role optimizer_state) by their
  /// names in the module, then starts recording.
  void begin(torch::nn::Module& module, const torch::optim::Optimizer& optimizer);
  [[nodiscard]] torch_support::access_recorder& recorder() { return recorder_; }
  [[nodiscard]] footprint::access_sequence end(std::string model, std::int64_t batch_size);

 private:
  memory_monitor& monitor_;
  memory::job_id job_;
  torch_support::access_recorder recorder_;
};

}  // namespace tandem::runtime::detail
