// What a generated profile spends where: per model, batch and GPU, the solo iteration, the host
// seconds (dispatch and launches), the device seconds, the kernels issued (host seconds over the
// spec's per-kernel cost) and the mean fill, for docs/sim-models.md's "Calibration".
//   build/bench/sim/tandem_profile_stats GPU MODEL BATCH [OPTIMIZER [KEY=VALUE ...]]

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "tandem/sim/gpu_spec.hpp"
#include "tandem/sim/profile_generator.hpp"

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s GPU MODEL BATCH [OPTIMIZER [KEY=VALUE ...]]\n", argv[0]);
    return 2;
  }
  try {
    const auto& gpu = tandem::sim::find_gpu(argv[1]);
    tandem::sim::model_request request;
    request.model = argv[2];
    request.batch_size = std::stoll(argv[3]);
    if (argc > 4) request.optimizer = argv[4];
    for (int i = 5; i < argc; ++i) {
      const std::string option = argv[i];
      const auto equals = option.find('=');
      request.options[option.substr(0, equals)] = std::stod(option.substr(equals + 1));
    }
    const auto profile = tandem::sim::generate_profile(request, gpu);
    double host = 0;
    double device = 0;
    double filled = 0;
    for (const auto& op : profile.operations) {
      host += op.host_s;
      device += op.device_time();
      filled += op.device_time() * op.fill;
    }
    const double iteration = profile.solo_iteration_s();
    const double kernels = (host - gpu.iteration_host_s) / gpu.kernel_launch_s;
    std::printf(
        "%s %s b%lld on %s: iteration %.1f ms, host %.1f ms, device %.1f ms, "
        "%.0f kernels, %zu operations, mean fill %.2f, %.1f samples/s\n",
        argv[2], request.optimizer.c_str(), static_cast<long long>(request.batch_size),
        gpu.name.c_str(), iteration * 1e3, host * 1e3, device * 1e3, kernels,
        profile.operations.size(), device > 0 ? filled / device : 0.0,
        static_cast<double>(request.batch_size) / iteration);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
