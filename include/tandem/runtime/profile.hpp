#pragma once
// Job profiles (`tandem profile`): each job of a workload trained alone for a few iterations,
// with its last iteration recorded in detail (every allocation and free with its kind and time,
// the regions held over the iteration, its top-level operations with their durations, and the
// iteration as a tensor access sequence), its iteration times and its persistent memory. The
// simulator replays them, `tandem plan` plans from their sequences; the format is in
// docs/profile-format.md.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <istream>
#include <optional>
#include <ostream>
#include <stop_token>
#include <string>
#include <vector>

#include "tandem/footprint/access_sequence.hpp"
#include "tandem/runtime/results.hpp"
#include "tandem/runtime/workload.hpp"

namespace tandem::runtime {

/// The version write_profile_json writes; read_profile_json also reads the one before.
inline constexpr int profile_schema_version = 3;
/// The oldest version read_profile_json reads (2: no access sequences).
inline constexpr int oldest_profile_schema_version = 2;

/// Field by field (a profile read back equals the one written).
[[nodiscard]] bool operator==(const iteration_detail& a, const iteration_detail& b);

struct job_profile {
  std::string name;
  std::string model;
  std::int64_t batch_size = 0;
  std::int64_t threads = 1;
  bool completed = false;
  /// Not completed because profiling was stopped (Ctrl-C) before or while this job ran.
  bool stopped = false;
  std::string error;                ///< why profiling failed or stopped; empty when it completed
  double setup_s = 0;               ///< building the model and optimizer
  std::vector<double> iteration_s;  ///< every profiled iteration's duration, in order
  std::size_t persistent_bytes = 0;
  std::size_t peak_live_bytes = 0;
  std::size_t peak_reserved_bytes = 0;
  std::optional<iteration_detail> last_iteration;
  /// The last iteration as a tensor access sequence (TENSILE's), when recorded: a training job
  /// that completed its iterations, in a profile of schema version 3 or later.
  std::optional<footprint::access_sequence> sequence;
  friend bool operator==(const job_profile&, const job_profile&) = default;
};

struct profile_set {
  std::string workload;
  std::string device;
  std::size_t region_size = 0;
  /// The machine's CPU cores (0 when unknown): a job's threads over them is the share of the
  /// machine its operations use.
  unsigned cores = 0;
  std::vector<job_profile> jobs;
  friend bool operator==(const profile_set&, const profile_set&) = default;
};

/// Trains every job of `spec` alone (one at a time, exclusive, on the workload's device and
/// budget) for `iterations` iterations and records its profile. A job that fails is recorded
/// with its error; the others are still profiled. `stop` ends the profiling at the running
/// job's next iteration: that job and those after it are recorded as stopped. Throws
/// config_error for iterations < 2.
[[nodiscard]] profile_set profile_workload(const workload& spec, std::int64_t iterations,
                                           std::ostream* progress = nullptr,
                                           std::stop_token stop = {});

void write_profile_json(const profile_set& profiles, std::ostream& out);

/// Reads what write_profile_json writes, of schema version 2 (without sequences) or 3. `source`
/// names the input in messages. Throws config_error naming the field for malformed input or
/// another version.
[[nodiscard]] profile_set read_profile_json(std::istream& in, const std::string& source);
/// read_profile_json of a file; config_error when it cannot be read.
[[nodiscard]] profile_set load_profile(const std::filesystem::path& path);

}  // namespace tandem::runtime
