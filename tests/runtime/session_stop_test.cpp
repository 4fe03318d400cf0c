// Stopping a run (Ctrl-C in `tandem run`): every job leaves at its next boundary, wherever it
// waits (at the gate, for a request, for its arrival), and keeps what it measured.

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <sstream>
#include <stop_token>
#include <thread>

#include "tandem/runtime/session.hpp"

namespace tandem::runtime {
namespace {

using namespace std::chrono_literals;

const job_result& job_named(const run_result& run, const char* name) {
  const auto found = std::find_if(run.jobs.begin(), run.jobs.end(),
                                  [&](const job_result& job) { return job.name == name; });
  if (found == run.jobs.end()) throw std::runtime_error(std::string("no job ") + name);
  return *found;
}

// Every way a job can wait, each far longer than the test: a training job at the gate behind
// another (temporal), an inference job for a request 1000 s away, a job arriving after 100 s,
// and a budget change due at 100 s.
constexpr const char* waiting_everywhere = R"(
[device]
kind = "cpu"
capacity = "1GiB"
budget = "256MiB"
region_size = "2MiB"
budget_schedule = [{ at = "100s", budget = "200MiB" }]

[policy]
name = "temporal"

[[job]]
name = "a"
model = "mlp"
batch_size = 16
iterations = 1000000
[job.model_options]
hidden = 64
image_side = 16

[[job]]
name = "b"
model = "mlp"
batch_size = 16
iterations = 1000000
[job.model_options]
hidden = 32
image_side = 16

[[job]]
name = "server"
kind = "inference"
model = "mlp"
batch_size = 4
rate = 0.001
requests = 5
[job.model_options]
hidden = 32
image_side = 16

[[job]]
name = "late"
model = "mlp"
batch_size = 16
iterations = 10
arrival = "100s"
[job.model_options]
image_side = 16
)";

TEST(SessionStop, EveryJobLeavesPromptlyWithWhatItMeasured) {
  const auto spec = parse_workload(waiting_everywhere, "stop.toml", training_vocabulary());
  std::stop_source stop;
  std::ostringstream timeline;
  run_options options;
  options.stop = stop.get_token();
  options.timeline = &timeline;
  std::thread stopper([&] {
    std::this_thread::sleep_for(1500ms);
    stop.request_stop();
  });
  const auto started = std::chrono::steady_clock::now();
  const auto run = run_workload(spec, options);
  const auto took = std::chrono::steady_clock::now() - started;
  stopper.join();

  // 1.5 s until the stop, then at most an iteration of a small MLP and the departures.
  EXPECT_LT(took, 6s);
  EXPECT_TRUE(run.stopped);
  EXPECT_EQ(run.failed_jobs(), 0u);
  EXPECT_EQ(run.stopped_jobs(), 4u);
  for (const char* name : {"a", "b"}) {
    const auto& job = job_named(run, name);
    SCOPED_TRACE(name);
    EXPECT_EQ(job.status, job_status::stopped);
    EXPECT_GT(job.iterations, 0);
    EXPECT_EQ(static_cast<std::size_t>(job.iterations), job.iteration_log.size());
    EXPECT_TRUE(job.first_loss.has_value());
    EXPECT_GT(job.peak_reserved_bytes, 0u);  // measured before its memory was released
  }
  const auto& server = job_named(run, "server");
  EXPECT_EQ(server.status, job_status::stopped);
  EXPECT_EQ(server.iterations, 0);  // woken from waiting for its first request
  const auto& late = job_named(run, "late");
  EXPECT_EQ(late.status, job_status::stopped);
  EXPECT_EQ(late.iterations, 0);
  EXPECT_NE(late.error.find("before the job arrived"), std::string::npos) << late.error;
  EXPECT_TRUE(run.budget_changes.empty());  // due at 100 s, never reached

  // Stopped jobs are named as such, not as failed or completed.
  std::ostringstream table;
  print_table(run, table);
  EXPECT_NE(table.str().find("4 stopped before the end"), std::string::npos) << table.str();
  EXPECT_NE(table.str().find("the run was stopped early"), std::string::npos) << table.str();
}

TEST(SessionStop, AStopBeforeTheRunStartsNoJob) {
  const auto spec = parse_workload(waiting_everywhere, "stop.toml", training_vocabulary());
  std::stop_source stop;
  stop.request_stop();
  run_options options;
  options.stop = stop.get_token();
  const auto run = run_workload(spec, options);
  EXPECT_TRUE(run.stopped);
  for (const auto& job : run.jobs) {
    EXPECT_EQ(job.status, job_status::stopped) << job.name;
    EXPECT_EQ(job.iterations, 0) << job.name;
  }
}

}  // namespace
}  // namespace tandem::runtime
