#include "tandem/torch/matched_copy_bandwidth.hpp"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

#include "tandem/torch/intra_op_threads.hpp"

namespace tandem::torch_support {

namespace {

double measure_on_one_thread() {
  constexpr std::int64_t side = 512;
  constexpr int runs = 5;
  double flops = 0;
  // A thread of its own, so that the caller's intra-op setting is neither used nor changed.
  std::thread worker([&] {
    set_intra_op_threads(1);
    torch::NoGradGuard no_grad;
    const auto a = torch::rand({side, side});
    const auto b = torch::rand({side, side});
    auto c = torch::mm(a, b);  // warm-up: first-touch and kernel selection
    std::vector<double> seconds;
    for (int i = 0; i < runs; ++i) {
      const auto start = std::chrono::steady_clock::now();
      c = torch::mm(a, b);
      seconds.push_back(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    std::nth_element(seconds.begin(), seconds.begin() + runs / 2, seconds.end());
    flops = 2.0 * side * side * side / std::max(seconds[runs / 2], 1e-9);
  });
  worker.join();
  return flops;
}

}  // namespace

double measured_gemm_flops() {
  static const double flops = measure_on_one_thread();
  return flops;
}

double matched_copy_bandwidth() {
  return measured_gemm_flops() * reference_pcie_bandwidth / reference_gpu_flops;
}

}  // namespace tandem::torch_support
