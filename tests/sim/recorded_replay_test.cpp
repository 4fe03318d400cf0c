// The simulator's memory model is the pool itself: a real iteration's allocations and frees,
// recorded by `tandem profile` and replayed through sim::replay_regions, take and return the
// regions the real pool did while training.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>

#include "tandem/common/units.hpp"
#include "tandem/runtime/profile.hpp"
#include "tandem/runtime/session.hpp"
#include "tandem/sim/region_replay.hpp"
#include "tandem/sim/workload_sim.hpp"

namespace tandem::sim {
namespace {

TEST(RecordedReplay, ReplayedRegionsMatchWhatThePoolHeldWhileTraining) {
  const std::string text =
      "[device]\nkind = \"cpu\"\ncapacity = \"512MiB\"\nregion_size = \"2MiB\"\n"
      "[policy]\nname = \"exclusive\"\n"
      "[[job]]\nname = \"resnet\"\nmodel = \"resnet20\"\nbatch_size = 16\niterations = 3\n"
      "[[job]]\nname = \"lm\"\nmodel = \"lstm\"\nbatch_size = 8\niterations = 3\n"
      "[job.model_options]\nsequence_length = 16\nvocabulary = 500\n";
  const auto spec = runtime::parse_workload(text, "replay.toml", runtime::training_vocabulary());
  const auto profiles = runtime::profile_workload(spec, 3);
  for (const auto& recorded : profiles.jobs) {
    ASSERT_TRUE(recorded.completed) << recorded.error;
    const auto simulated = from_recorded(recorded, profiles.cores);
    auto replayed = simulated;
    replay_regions(replayed, profiles.region_size);
    // What the iteration takes above what it starts with: the persistent state is one tensor in
    // the replay (many in training), so only the transient part is compared.
    const auto transient = [](const schedule::usage_curve& curve) {
      return static_cast<double>(curve.peak() - curve.held_at_start);
    };
    const double real = transient(simulated.held);
    const double replay = transient(replayed.held);
    EXPECT_GT(real, 0) << recorded.name;
    EXPECT_NEAR(replay, real, std::max(2.0 * 2 * MiB, 0.1 * real))
        << recorded.name << ": the real pool took " << format_bytes(static_cast<std::size_t>(real))
        << " above its start, the replay " << format_bytes(static_cast<std::size_t>(replay));
    EXPECT_EQ(replayed.held.held_at_end(), replayed.held.held_at_start) << recorded.name;
  }
}

}  // namespace
}  // namespace tandem::sim
