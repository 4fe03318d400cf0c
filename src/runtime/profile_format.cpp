#include <nlohmann/json.hpp>

#include "tandem/runtime/profile.hpp"

namespace tandem::runtime {

namespace {

nlohmann::json to_json(const iteration_detail& detail) {
  nlohmann::json allocations = nlohmann::json::array();
  for (const auto& step : detail.allocations) {
    allocations.push_back({step.at_s, step.delta_bytes, memory::to_string(step.kind)});
  }
  nlohmann::json held_steps = nlohmann::json::array();
  for (const auto& step : detail.held.steps) held_steps.push_back({step.at_s, step.delta});
  return {{"allocations", allocations},
          {"held",
           {{"held_at_start", detail.held.held_at_start},
            {"duration_s", detail.held.duration_s},
            {"steps", held_steps}}}};
}

}  // namespace

void write_profile_json(const profile_set& profiles, std::ostream& out) {
  nlohmann::json jobs = nlohmann::json::array();
  for (const auto& job : profiles.jobs) {
    jobs.push_back({{"name", job.name},
                    {"model", job.model},
                    {"batch_size", job.batch_size},
                    {"threads", job.threads},
                    {"status", job.completed ? "completed" : "failed"},
                    {"error", job.error},
                    {"setup_s", job.setup_s},
                    {"iteration_s", job.iteration_s},
                    {"persistent_bytes", job.persistent_bytes},
                    {"peak_live_bytes", job.peak_live_bytes},
                    {"peak_reserved_bytes", job.peak_reserved_bytes},
                    {"last_iteration",
                     job.last_iteration ? to_json(*job.last_iteration) : nlohmann::json(nullptr)}});
  }
  const nlohmann::json document{{"schema_version", profile_schema_version},
                                {"workload", profiles.workload},
                                {"device", profiles.device},
                                {"region_size", profiles.region_size},
                                {"jobs", jobs}};
  out << document.dump(1) << '\n';
}

}  // namespace tandem::runtime
