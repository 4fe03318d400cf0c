// The GPU catalogue. Memory sizes are the marketed capacities read as GiB (what the device
// reports is a few hundred MiB less once the driver has its share). Host-link figures are what
// a large pinned copy achieves, not the theoretical rate: PCIe 3.0 x16 is 15.75 GB/s in theory
// and about 12 GB/s in practice (bandwidthTest), 4.0 about 25 of 31.5, 5.0 about 50 of 63.

#include "tandem/sim/gpu_spec.hpp"

#include <algorithm>
#include <cctype>
#include <string>
#include <utility>

#include "tandem/common/error.hpp"
#include "tandem/common/names.hpp"
#include "tandem/common/units.hpp"

namespace tandem::sim {
namespace {

constexpr double tera = 1e12;
constexpr double giga = 1e9;
constexpr double micro = 1e-6;
constexpr double milli = 1e-3;

/// The host of the machine each paper paired with the GPU, as the cost model's host constants
/// (docs/sim-models.md, "Host time"): calibrated once per spec against published solo
/// throughputs (bench/sim/calibration.sh), not per model.
void set_host(gpu_spec& g, double per_kernel_s, double per_iteration_s, unsigned cores,
              std::string source) {
  g.kernel_launch_s = per_kernel_s;
  g.iteration_host_s = per_iteration_s;
  g.min_kernel_s = 2 * micro;
  g.in_flight_ops = 64;
  g.host_cores = cores;
  g.host_source = std::move(source);
}

gpu_spec p100() {
  gpu_spec g;
  g.name = "P100-16GB";
  g.description = "NVIDIA Tesla P100 (PCIe, 16 GB HBM2)";
  g.memory_bytes = 16 * GiB;
  g.fp32_flops = 9.3 * tera;
  g.memory_bandwidth = 732 * giga;
  g.pcie_bandwidth = 12 * giga;
  g.sm_count = 56;
  g.source =
      "NVIDIA Tesla P100 datasheet: 9.3 TFLOP/s FP32 (PCIe), 732 GB/s HBM2; Pascal GP100 "
      "whitepaper: 56 SMs; PCIe 3.0 x16 (15.75 GB/s theoretical, 12 GB/s achievable)";
  g.aliases = {"p100", "p100-16gb", "tesla-p100"};
  set_host(g, 12 * micro, 3 * milli, 28,
           "Waterwave's P100-S: two Xeon E5-2680 v4 (28 cores, 2.4 GHz), TensorFlow 1.15");
  return g;
}

gpu_spec v100() {
  gpu_spec g;
  g.name = "V100-32GB";
  g.description = "NVIDIA Tesla V100 (SXM2, 32 GB HBM2)";
  g.memory_bytes = 32 * GiB;
  g.fp32_flops = 15.7 * tera;
  g.memory_bandwidth = 900 * giga;
  g.pcie_bandwidth = 12 * giga;
  g.sm_count = 80;
  g.source =
      "NVIDIA V100 datasheet: 15.7 TFLOP/s FP32 (SXM2), 900 GB/s HBM2; Volta GV100 "
      "whitepaper: 80 SMs; PCIe 3.0 x16 to the host (15.75 GB/s theoretical, 12 GB/s "
      "achievable)";
  g.aliases = {"v100", "v100-32gb", "v100-sxm2", "tesla-v100"};
  set_host(g, 30 * micro, 3 * milli, 28,
           "Waterwave's V100-S: two Xeon Gold 5117 (28 cores, 2.0 GHz), TensorFlow 1.15");
  return g;
}

gpu_spec rtx_2080_ti() {
  gpu_spec g;
  g.name = "RTX 2080 Ti-11GB";
  g.description = "NVIDIA GeForce RTX 2080 Ti (11 GB GDDR6)";
  g.memory_bytes = 11 * GiB;
  g.fp32_flops = 13.4 * tera;
  g.memory_bandwidth = 616 * giga;
  g.pcie_bandwidth = 12 * giga;
  g.sm_count = 68;
  g.source =
      "NVIDIA Turing TU102 whitepaper (RTX 2080 Ti reference): 4352 CUDA cores at 1545 MHz "
      "boost = 13.4 TFLOP/s FP32, 616 GB/s GDDR6, 68 SMs; PCIe 3.0 x16 (12 GB/s achievable)";
  g.aliases = {"2080ti", "rtx2080ti", "rtx-2080-ti", "2080-ti"};
  set_host(g, 10 * micro, 2 * milli, 4,
           "Zico's Machine 2: Xeon Gold 5222 (4 cores, 3.8 GHz), TensorFlow 1.13");
  return g;
}

gpu_spec a100_40gb() {
  gpu_spec g;
  g.name = "A100-40GB";
  g.description = "NVIDIA A100 (SXM4, 40 GB HBM2)";
  g.memory_bytes = 40 * GiB;
  g.fp32_flops = 19.5 * tera;
  g.memory_bandwidth = 1555 * giga;
  g.pcie_bandwidth = 25 * giga;
  g.sm_count = 108;
  g.source =
      "NVIDIA A100 datasheet: 19.5 TFLOP/s FP32 (not TF32), 1,555 GB/s HBM2 (40GB); Ampere "
      "GA100 whitepaper: 108 SMs; PCIe 4.0 x16 (31.5 GB/s theoretical, 25 GB/s achievable)";
  g.aliases = {"a100", "a100-40gb", "a100-sxm4-40gb"};
  set_host(g, 10 * micro, 2 * milli, 16,
           "no paper: a 16-core host at the V100 machines' per-kernel cost");
  return g;
}

gpu_spec a100_80gb() {
  gpu_spec g;
  g.name = "A100-80GB";
  g.description = "NVIDIA A100 (SXM4, 80 GB HBM2e)";
  g.memory_bytes = 80 * GiB;
  g.fp32_flops = 19.5 * tera;
  g.memory_bandwidth = 2039 * giga;
  g.pcie_bandwidth = 25 * giga;
  g.sm_count = 108;
  g.source =
      "NVIDIA A100 datasheet: 19.5 TFLOP/s FP32 (not TF32), 2,039 GB/s HBM2e (80GB SXM); "
      "Ampere GA100 whitepaper: 108 SMs; PCIe 4.0 x16 (31.5 GB/s theoretical, 25 GB/s "
      "achievable)";
  g.aliases = {"a100-80gb", "a100-sxm4-80gb"};
  set_host(g, 10 * micro, 2 * milli, 16,
           "no paper: a 16-core host at the V100 machines' per-kernel cost");
  return g;
}

gpu_spec h100() {
  gpu_spec g;
  g.name = "H100-80GB";
  g.description = "NVIDIA H100 (SXM5, 80 GB HBM3)";
  g.memory_bytes = 80 * GiB;
  g.fp32_flops = 67 * tera;
  g.memory_bandwidth = 3350 * giga;
  g.pcie_bandwidth = 50 * giga;
  g.sm_count = 132;
  g.source =
      "NVIDIA H100 datasheet: 67 TFLOP/s FP32 (SXM), 3.35 TB/s HBM3; Hopper whitepaper: 132 "
      "SMs (SXM5); PCIe 5.0 x16 (63 GB/s theoretical, 50 GB/s achievable)";
  g.aliases = {"h100", "h100-80gb", "h100-sxm", "h100-sxm5"};
  set_host(g, 10 * micro, 2 * milli, 16,
           "no paper: a 16-core host at the V100 machines' per-kernel cost");
  return g;
}

std::string lower(std::string_view text) {
  std::string out;
  for (const char c : text) out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

/// Lower case without spaces, '-' and '_': "RTX 2080 Ti-11GB" -> "rtx2080ti11gb".
std::string normalised(std::string_view name) {
  std::string out;
  for (const char c : lower(name)) {
    if (c != ' ' && c != '-' && c != '_') out += c;
  }
  return out;
}

bool answers_to(const gpu_spec& gpu, const std::string& wanted) {
  if (normalised(gpu.name) == wanted) return true;
  return std::any_of(gpu.aliases.begin(), gpu.aliases.end(),
                     [&](const std::string& alias) { return normalised(alias) == wanted; });
}

std::string unknown_gpu_message(std::string_view name) {
  std::vector<std::string> listed;
  std::vector<std::string> spellings;  // lower case, for the suggestion
  for (const auto& gpu : gpu_specs()) {
    listed.push_back(gpu.name + " (" + gpu.aliases.front() + ")");
    spellings.push_back(lower(gpu.name));
    for (const auto& alias : gpu.aliases) spellings.push_back(lower(alias));
  }
  return "unknown GPU '" + std::string(name) + "'; known GPUs: " + join_names(listed) +
         suggest_name(lower(name), spellings);
}

}  // namespace

const std::vector<gpu_spec>& gpu_specs() {
  static const std::vector<gpu_spec> specs = {p100(),      v100(),      rtx_2080_ti(),
                                              a100_40gb(), a100_80gb(), h100()};
  return specs;
}

const gpu_spec& find_gpu(std::string_view name) {
  const std::string wanted = normalised(name);
  for (const auto& gpu : gpu_specs()) {
    if (answers_to(gpu, wanted)) return gpu;
  }
  TANDEM_FAIL(config_error, unknown_gpu_message(name));
}

}  // namespace tandem::sim
