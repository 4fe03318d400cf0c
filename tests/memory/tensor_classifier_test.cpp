// The tensor classifier (Zico §6.2): kinds learned from one iteration's allocations and frees,
// worked out by hand on a synthetic iteration, then applied by position and size to later
// iterations; drift, size mismatches and allocations outside iterations fall back; relearn();
// and a seeded randomized check of learned kinds against the rule applied directly to a trace.

#include "tandem/memory/tensor_classifier.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <deque>
#include <random>
#include <utility>
#include <vector>

#include "tandem/common/error.hpp"

namespace tandem::memory {
namespace {

using kind = alloc_kind;

/// One step of a synthetic iteration: allocate `bytes` as tensor `id`, or free tensor `id`.
struct op {
  bool is_free = false;
  std::size_t id = 0;
  std::size_t bytes = 0;
};

op alloc(std::size_t id, std::size_t bytes) {
  return {false, id, bytes};
}
op free_of(std::size_t id) {
  return {true, id, 0};
}

/// Plays scripts against a classifier with fake, distinct addresses (one byte per tensor id),
/// the way the allocator drives it: classify, allocate, on_allocate; on_free, free.
class player {
 public:
  explicit player(tensor_classifier& classifier) : classifier_(classifier) {}

  /// The kinds the classifier answered for the script's allocations, in order.
  std::vector<kind> play(const std::vector<op>& script, kind fallback = kind::unknown) {
    std::vector<kind> answered;
    for (const auto& step : script) {
      if (step.is_free) {
        classifier_.on_free(address(step.id));
      } else {
        answered.push_back(classifier_.classify(step.bytes, fallback));
        classifier_.on_allocate(address(step.id), step.bytes);
      }
    }
    return answered;
  }

  std::vector<kind> iteration(const std::vector<op>& script, kind fallback = kind::unknown) {
    classifier_.begin_iteration();
    auto answered = play(script, fallback);
    classifier_.end_iteration();
    return answered;
  }

  const void* address(std::size_t id) {
    if (id >= memory_.size()) memory_.resize(id + 1);
    return &memory_[id];
  }

 private:
  tensor_classifier& classifier_;
  std::deque<std::byte> memory_;  // grows without moving: addresses stay put
};

// A forward that keeps its activations, a peak, a backward that frees them and makes gradients,
// scratch buffers on both sides and state that outlives the iteration. Live bytes after each
// step on the right; the peak is the 10000 after tensor 5.
// clang-format off
const std::vector<op> training_iteration{
    alloc(0, 1000),  //  1000  input batch                        -> feature_map
    alloc(1, 50),    //  1050  scratch, freed before the next     -> temporary (short-lived)
    free_of(1),      //  1000
    alloc(2, 2000),  //  3000  activation 1                       -> feature_map
    alloc(3, 500),   //  3500  forward intermediate               -> temporary (freed before peak)
    alloc(4, 3000),  //  6500  activation 2                       -> feature_map
    free_of(3),      //  6000
    alloc(5, 4000),  // 10000  the peak (position 5), freed first -> feature_map, though no
    free_of(5),      //  6000  backward starts                       allocation was made meanwhile
    alloc(6, 800),   //  6800  weight gradient 2                  -> gradient
    alloc(7, 300),   //  7100  gradient scratch, freed at once    -> temporary (short-lived)
    free_of(7),      //  6800
    free_of(4),      //  3800
    alloc(8, 600),   //  4400  weight gradient 1, 1 alloc later   -> gradient
    free_of(2),      //  2400
    alloc(9, 64),    //  2464  optimizer state, never freed       -> persistent
    free_of(0),      //  end of step: the batch and the gradients go
    free_of(6),
    free_of(8),
};
// clang-format on

const std::vector<kind> training_kinds{
    kind::feature_map, kind::temporary, kind::feature_map, kind::temporary, kind::feature_map,
    kind::feature_map, kind::gradient,  kind::temporary,   kind::gradient,  kind::persistent};

/// The training iteration with the optimizer state made only once, as in later iterations.
std::vector<op> steady_iteration() {
  auto script = training_iteration;
  script.push_back(free_of(9));
  return script;
}

TEST(TensorClassifier, LearnsTheKindsOfAHandWorkedIteration) {
  tensor_classifier classifier;
  player run(classifier);
  EXPECT_FALSE(classifier.learned());
  const auto first = run.iteration(training_iteration, kind::unknown);
  EXPECT_EQ(first, std::vector<kind>(10, kind::unknown)) << "nothing is known while learning";
  ASSERT_TRUE(classifier.learned());
  ASSERT_EQ(classifier.table().size(), 10u);
  for (std::size_t i = 0; i < 10; ++i) {
    EXPECT_EQ(classifier.table()[i].kind, training_kinds[i]) << "position " << i;
  }
  const auto& profile = classifier.profile();
  EXPECT_EQ(profile.iteration_allocations, 10u);
  EXPECT_EQ(profile.peak_position, 5u);
  EXPECT_EQ(profile.peak_live_bytes, 10000u);
  EXPECT_EQ(profile.allocations[index_of(kind::feature_map)], 4u);
  EXPECT_EQ(profile.bytes[index_of(kind::feature_map)], 10000u);
  EXPECT_EQ(profile.allocations[index_of(kind::temporary)], 3u);
  EXPECT_EQ(profile.bytes[index_of(kind::temporary)], 850u);
  EXPECT_EQ(profile.allocations[index_of(kind::gradient)], 2u);
  EXPECT_EQ(profile.bytes[index_of(kind::gradient)], 1400u);
  EXPECT_EQ(profile.allocations[index_of(kind::persistent)], 1u);
  EXPECT_EQ(profile.bytes[index_of(kind::persistent)], 64u);
  EXPECT_EQ(profile.allocations[index_of(kind::unknown)], 0u);
}

TEST(TensorClassifier, LaterIterationsGetTheLearnedKindsByPosition) {
  tensor_classifier classifier;
  player run(classifier);
  (void)run.iteration(training_iteration);
  for (int again = 0; again < 3; ++again) {
    EXPECT_EQ(run.iteration(steady_iteration(), kind::gradient), training_kinds);
  }
  EXPECT_EQ(classifier.answers().learned, 30u);
  EXPECT_EQ(classifier.answers().fallback, 0u);
}

TEST(TensorClassifier, AllocationsOutsideIterationsAreNeitherClassifiedNorCounted) {
  tensor_classifier classifier;
  player run(classifier);
  // The model is built before the first iteration; its weights live on.
  EXPECT_EQ(run.play({alloc(40, 1000)}, kind::persistent), std::vector<kind>{kind::persistent});
  (void)run.iteration(training_iteration);
  // Between iterations (evaluation, checkpointing): the fallback, and positions do not move.
  EXPECT_EQ(run.play({alloc(41, 1000), free_of(41)}, kind::unknown),
            std::vector<kind>{kind::unknown});
  EXPECT_EQ(run.iteration(steady_iteration()), training_kinds);
  EXPECT_EQ(classifier.answers().learned, 10u);
}

TEST(TensorClassifier, FreesOfMemoryMadeBeforeTheIterationDoNotMoveThePeak) {
  tensor_classifier classifier;
  player run(classifier);
  (void)run.play({alloc(40, 100000)});
  classifier.begin_iteration();
  (void)run.play({free_of(40)});  // a previous iteration's leftover goes first
  (void)run.play(training_iteration);
  classifier.end_iteration();
  EXPECT_EQ(classifier.profile().peak_position, 5u);
  EXPECT_EQ(classifier.table().size(), 10u);
}

TEST(TensorClassifier, ASizeThatDoesNotMatchFallsBackAndTheRestStillMatch) {
  tensor_classifier classifier;
  player run(classifier);
  (void)run.iteration(training_iteration);
  auto script = steady_iteration();
  script[4].bytes = 501;  // tensor 3, position 3: another shape this time
  auto expected = training_kinds;
  expected[3] = kind::unknown;
  EXPECT_EQ(run.iteration(script, kind::unknown), expected);
  EXPECT_EQ(classifier.answers().learned, 9u);
  EXPECT_EQ(classifier.answers().fallback, 1u);
}

TEST(TensorClassifier, ASequenceThatDriftsFallsBackAndKeepsCounting) {
  tensor_classifier classifier;
  player run(classifier);
  (void)run.iteration(training_iteration);
  // One extra allocation up front shifts every position: no size matches any more, and the
  // eleventh allocation lies beyond the learned iteration.
  auto script = steady_iteration();
  script.insert(script.begin(), {alloc(20, 77), free_of(20)});
  EXPECT_EQ(run.iteration(script, kind::temporary), std::vector<kind>(11, kind::temporary));
  EXPECT_EQ(classifier.answers().fallback, 11u);
  EXPECT_EQ(classifier.answers().learned, 0u);
  // The next iteration is aligned again: each begins at position 0.
  EXPECT_EQ(run.iteration(steady_iteration(), kind::temporary), training_kinds);
}

TEST(TensorClassifier, RelearnLearnsFromTheNextIterationAndAnswersWithTheOldTableMeanwhile) {
  tensor_classifier classifier;
  player run(classifier);
  (void)run.iteration(training_iteration);
  classifier.relearn();
  EXPECT_TRUE(classifier.learning());
  EXPECT_TRUE(classifier.learned());
  // A new model: three tensors, all live until the end and freed in order.
  const std::vector<op> changed{alloc(0, 1000), alloc(1, 2000), alloc(2, 3000),
                                free_of(0),     free_of(1),     free_of(2)};
  auto answered = run.iteration(changed, kind::unknown);
  EXPECT_EQ(answered, (std::vector<kind>{kind::feature_map, kind::unknown, kind::unknown}))
      << "only position 0 has the learned size";
  EXPECT_FALSE(classifier.learning());
  ASSERT_EQ(classifier.table().size(), 3u);
  // Tensor 2 makes the peak: live at the peak wins over short-lived.
  EXPECT_EQ(run.iteration(changed),
            (std::vector<kind>{kind::feature_map, kind::feature_map, kind::feature_map}));
  EXPECT_EQ(classifier.answers().learned, 3u);
}

TEST(TensorClassifier, AnIterationCutShortIsNotLearnedFrom) {
  tensor_classifier classifier;
  player run(classifier);
  classifier.begin_iteration();
  (void)run.play({alloc(0, 1000), alloc(1, 5)});  // an exception ends this iteration early
  classifier.begin_iteration();                   // the next one starts over
  (void)run.play(steady_iteration());
  classifier.end_iteration();
  ASSERT_EQ(classifier.table().size(), 10u);
  EXPECT_EQ(classifier.table()[1].kind, kind::temporary);
  EXPECT_THROW(classifier.end_iteration(), usage_error) << "no iteration is open";
}

TEST(TensorClassifier, ZeroByteAllocationsAreIgnored) {
  tensor_classifier classifier;
  player run(classifier);
  classifier.begin_iteration();
  classifier.on_allocate(nullptr, 0);  // empty tensors get no memory from the pool
  (void)run.play(training_iteration);
  classifier.end_iteration();
  EXPECT_EQ(classifier.table().size(), 10u);
}

// ---- Randomized: learned kinds agree with the rule applied directly to the trace ----

/// The rule, written independently of the classifier: over the trace's events in order.
std::vector<kind> rule_of(const std::vector<op>& trace) {
  struct life {
    std::size_t bytes = 0;
    std::size_t alloc_event = 0;
    std::size_t free_event = 0;
    bool freed = false;
  };
  std::vector<life> lives;
  std::vector<std::size_t> index_of_id(trace.size() + 1, 0);
  std::size_t live = 0;
  std::size_t peak = 0;
  std::size_t peak_event = 0;
  for (std::size_t e = 0; e < trace.size(); ++e) {
    const auto& step = trace[e];
    if (step.is_free) {
      auto& l = lives[index_of_id[step.id]];
      l.freed = true;
      l.free_event = e;
      live -= l.bytes;
    } else {
      index_of_id[step.id] = lives.size();
      lives.push_back({step.bytes, e, 0, false});
      live += step.bytes;
      if (live > peak) {
        peak = live;
        peak_event = e;
      }
    }
  }
  const double threshold = std::max(
      1.0, std::floor(tensor_classifier::short_lived_fraction * static_cast<double>(lives.size())));
  std::vector<kind> kinds;
  for (const auto& l : lives) {
    // Allocations made while it was live.
    const auto during = std::count_if(lives.begin(), lives.end(), [&](const life& other) {
      return other.alloc_event > l.alloc_event && other.alloc_event < l.free_event;
    });
    if (!l.freed) {
      kinds.push_back(kind::persistent);
    } else if (l.alloc_event <= peak_event && l.free_event > peak_event) {
      kinds.push_back(kind::feature_map);
    } else if (l.free_event < peak_event || static_cast<double>(during) < threshold) {
      kinds.push_back(kind::temporary);
    } else {
      kinds.push_back(kind::gradient);
    }
  }
  return kinds;
}

/// A random iteration: `allocations` allocations of random sizes, each freed after a random
/// number of later allocations, or (rarely) never.
std::vector<op> random_trace(std::mt19937_64& rng, std::size_t allocations) {
  std::uniform_int_distribution<std::size_t> size(1, 1 << 20);
  std::uniform_int_distribution<std::size_t> hold(0, allocations);
  std::bernoulli_distribution survives(0.05);
  std::bernoulli_distribution free_now(0.4);
  std::vector<op> trace;
  std::vector<std::pair<std::size_t, std::size_t>> pending;  // (id, allocations left to live)
  for (std::size_t id = 0; id < allocations; ++id) {
    trace.push_back(alloc(id, size(rng)));
    if (!survives(rng)) pending.emplace_back(id, free_now(rng) ? 0 : hold(rng));
    // Free what is due, in random order.
    std::shuffle(pending.begin(), pending.end(), rng);
    for (auto it = pending.begin(); it != pending.end();) {
      if (it->second == 0) {
        trace.push_back(free_of(it->first));
        it = pending.erase(it);
      } else {
        --it->second;
        ++it;
      }
    }
  }
  for (const auto& [id, left] : pending) trace.push_back(free_of(id));
  return trace;
}

TEST(TensorClassifierProperty, LearnedKindsFollowTheRuleOnRandomTraces) {
  std::array<std::size_t, alloc_kind_count> seen{};
  for (std::uint64_t seed = 1; seed <= 300; ++seed) {
    std::mt19937_64 rng(seed);
    const auto allocations = std::uniform_int_distribution<std::size_t>(1, 400)(rng);
    const auto trace = random_trace(rng, allocations);
    const auto expected = rule_of(trace);

    tensor_classifier classifier;
    player run(classifier);
    (void)run.iteration(trace);
    ASSERT_EQ(classifier.table().size(), expected.size()) << "seed " << seed;
    std::array<std::size_t, alloc_kind_count> counts{};
    for (std::size_t i = 0; i < expected.size(); ++i) {
      ASSERT_EQ(classifier.table()[i].kind, expected[i]) << "seed " << seed << " position " << i;
      ++counts[index_of(expected[i])];
    }
    EXPECT_EQ(classifier.profile().allocations, counts) << "seed " << seed;
    for (std::size_t k = 0; k < alloc_kind_count; ++k) seen[k] += counts[k];
    // Replaying the same trace answers exactly the learned kinds.
    ASSERT_EQ(run.iteration(trace, kind::unknown), expected) << "seed " << seed;
    EXPECT_EQ(classifier.answers().fallback, 0u) << "seed " << seed;
  }
  // The traces exercise every rule, not just one.
  for (auto k : {kind::persistent, kind::feature_map, kind::gradient, kind::temporary}) {
    EXPECT_GT(seen[index_of(k)], 100u) << to_string(k);
  }
}

}  // namespace
}  // namespace tandem::memory
