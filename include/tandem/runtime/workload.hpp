#pragma once
// A workload file: the device, the policy and the jobs to run side by side (TOML).
//
//   [device]                       kind ("cpu" | "cuda"), capacity, budget, region_size,
//                                  budget_schedule = [{ at = "10s", budget = "50%" }, ...],
//                                  cpu: copy_bandwidth; cuda: index, inflight_limit
//   [policy]                       name, and any option of that policy
//   [[job]]                        name, kind, model, batch_size, arrival, priority, threads,
//                                  and by kind (each kind refuses the other's keys):
//                                  kind = "training" (default): optimizer, learning_rate,
//                                    iterations | duration, planner, plan_budget
//                                  kind = "inference": rate (requests/s), requests | duration,
//                                    request_seed (default: the job's index in the file)
//   [job.model_options]            options of the model (image_side, depth, hidden, ...)
//
// parse_workload checks the structure and every value it can judge by itself; names that other
// components own (models, policies, their options) are checked against a vocabulary the caller
// passes in, so this file depends on neither. Every error names the file, the line and a fix.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "tandem/device/backend.hpp"
#include "tandem/footprint/planner.hpp"
#include "tandem/runtime/footprint_budget.hpp"

namespace tandem::runtime {

/// A value of a free-form option table (policy or model options), with where it was written.
struct option_value {
  std::variant<std::int64_t, double, bool, std::string> value;
  std::size_t line = 0;
};
using option_table = std::map<std::string, option_value>;

/// The budget becomes `bytes` at `at_s` seconds after the workload starts (Zico §7.3).
struct budget_change {
  double at_s = 0;
  std::size_t bytes = 0;
  std::size_t line = 0;
};

/// How fast the cpu backend's copy engine moves data (`copy_bandwidth` in [device]).
struct copy_rate {
  enum class mode {
    matched,  ///< "auto" (the default): this machine's compute-to-copy ratio made a V100's over
              ///< PCIe 3.0 (torch/matched_copy_bandwidth.hpp)
    memcpy,   ///< "memcpy" or 0: as fast as memory copies go
    fixed,    ///< "12GB/s" or a number of bytes per second
  };
  mode how = mode::matched;
  double bytes_per_s = 0;  ///< fixed only
  friend bool operator==(const copy_rate&, const copy_rate&) = default;
};

struct device_spec {
  device::backend_kind kind = device::backend_kind::cpu;
  int index = 0;  ///< cuda: the device ordinal (cuda:N)
  /// cuda: Zico's in-flight limit (§6.1), in allocating operations a job's host may run ahead of
  /// its stream (torch/cuda_allocator.hpp); 0: none.
  std::size_t inflight_limit = 0;
  std::size_t capacity = 0;     ///< bytes the pool reserves
  std::size_t budget = 0;       ///< bytes the jobs may hold together (0: the capacity)
  std::size_t region_size = 0;  ///< 0: the pool's default
  copy_rate copy_bandwidth;     ///< cpu backend: how fast its copy streams move data
  std::vector<budget_change> budget_schedule;  ///< in time order
  std::size_t line = 0;                        ///< where the [device] table starts
};

struct policy_spec {
  std::string name;
  option_table options;
  /// `planner = "tensile"`: the footprint planner whose plans the policy may run jobs under
  /// (schedule::chooses_footprint), a planner spec; none: jobs run as they are.
  std::optional<std::string> planner;
  std::size_t planner_line = 0;
  std::size_t line = 0;
};

/// Training runs forward, backward and update steps back to back; inference serves requests,
/// one forward pass (no gradients) per request, as they arrive.
enum class job_kind { training, inference };

struct job_spec {
  std::string name;
  job_kind kind = job_kind::training;
  std::string model;
  option_table model_options;
  std::int64_t batch_size = 0;
  std::string optimizer = "sgd";
  double learning_rate = 0.01;
  /// Exactly one of iterations and duration is set; an inference job's iterations are its
  /// requests (the workload key `requests`).
  std::optional<std::int64_t> iterations;
  std::optional<double> duration_s;
  double arrival_s = 0;            ///< seconds after the workload starts
  std::int64_t priority = 0;       ///< higher runs first where a policy uses it
  std::int64_t threads = 1;        ///< intra-op threads: the job's share of compute
  double request_rate = 0;         ///< inference: mean requests per second (Poisson arrivals)
  std::uint64_t request_seed = 0;  ///< inference: seeds the request arrival times (default:
                                   ///< the job's index in the file)
  /// Training: the footprint planner (footprint::planner_names()) that plans what the job swaps
  /// and recomputes, and the budget its plan is made for. `tandem plan` makes and prices the
  /// plan; runs do not execute plans yet.
  std::optional<std::string> planner;
  std::optional<footprint_budget> plan_budget;
  std::size_t planner_line = 0;  ///< where `planner` is written (0: not written)
  std::size_t line = 0;          ///< where the [[job]] table starts
};

struct workload {
  std::string source;  ///< file name, for messages
  device_spec device;
  policy_spec policy;
  std::vector<job_spec> jobs;
};

/// Names the caller accepts; an empty list accepts any name.
struct workload_vocabulary {
  std::vector<std::string> models;
  std::vector<std::string> policies;
  std::vector<std::string> optimizers{"sgd", "adam"};
  std::vector<std::string> planners = footprint::planner_spellings();
};

/// Throws config_error "FILE:LINE: problem; hint" for any invalid input.
[[nodiscard]] workload parse_workload(std::string_view text, const std::string& source,
                                      const workload_vocabulary& vocabulary);
/// A device and a policy without jobs: [device] and [policy] as a workload file has them, read
/// by the same code (the library API's runtime options). Throws config_error as parse_workload.
[[nodiscard]] workload parse_device_and_policy(std::string_view text, const std::string& source,
                                               const workload_vocabulary& vocabulary);
[[nodiscard]] workload load_workload(const std::filesystem::path& path,
                                     const workload_vocabulary& vocabulary);

}  // namespace tandem::runtime
