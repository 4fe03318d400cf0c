// Kinds learned from real training (Zico §6.2): a model of the zoo trains on the pool with a
// tensor_classifier on its binding. The pool's trace shows what kind each allocation got; after
// the learning iteration the kinds follow the allocations' lifetimes, not the phase scopes that
// supply the fallback (forward = feature_map, backward = gradient, update = temporary).

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <array>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tandem/device/cpu_backend.hpp"
#include "tandem/memory/tensor_classifier.hpp"
#include "tandem/memory/trace.hpp"
#include "tandem/models/optimizer.hpp"
#include "tandem/models/zoo.hpp"
#include "tandem/torch/cpu_allocator.hpp"
#include "tandem/torch/job_binding.hpp"

namespace tandem::torch_support {
namespace {

using memory::alloc_kind;
using memory::index_of;
using memory::trace_event;
using memory::trace_op;

memory::pool_options pool_of(std::size_t capacity) {
  memory::pool_options options;
  options.capacity = capacity;
  options.region_size = 2 * MiB;
  options.small_threshold = 64 * KiB;
  return options;
}

/// One iteration of the trace: where it and its phases start, as indices into the events.
struct iteration_marks {
  std::size_t begin = 0;
  std::size_t backward = 0;
  std::size_t update = 0;
  std::size_t end = 0;
};

/// An allocation of one iteration, read back from the pool's trace.
struct seen_allocation {
  std::size_t event = 0;  // index in the trace
  std::size_t bytes = 0;
  alloc_kind kind = alloc_kind::unknown;
  std::size_t freed_event = 0;
  bool freed = false;
};

/// The iteration's allocations in order, and the trace index of its peak of live bytes.
struct iteration_view {
  std::vector<seen_allocation> allocations;
  std::size_t peak_event = 0;
};

iteration_view view_of(const std::vector<trace_event>& events, const iteration_marks& marks) {
  iteration_view view;
  std::map<std::size_t, std::size_t> live;  // offset -> allocation
  std::size_t bytes = 0;
  std::size_t peak = 0;
  for (std::size_t e = marks.begin; e < marks.end; ++e) {
    const auto& event = events[e];
    if (event.op == trace_op::alloc) {
      live[event.offset] = view.allocations.size();
      view.allocations.push_back({e, event.bytes, event.kind, 0, false});
      bytes += event.bytes;
      if (bytes > peak) {
        peak = bytes;
        view.peak_event = e;
      }
    } else if (event.op == trace_op::free) {
      const auto found = live.find(event.offset);
      if (found == live.end()) continue;  // made before the iteration
      auto& allocation = view.allocations[found->second];
      allocation.freed = true;
      allocation.freed_event = e;
      bytes -= allocation.bytes;
      live.erase(found);
    }
  }
  return view;
}

/// The kinds the rule gives this iteration's own allocations (from the trace, rounded sizes).
std::vector<alloc_kind> rule_kinds(const std::vector<trace_event>& events,
                                   const iteration_marks& marks) {
  std::vector<memory::tensor_classifier::trace_step> trace;
  std::map<std::size_t, std::size_t> live;  // offset -> position
  std::size_t position = 0;
  for (std::size_t e = marks.begin; e < marks.end; ++e) {
    const auto& event = events[e];
    if (event.op == trace_op::alloc) {
      live[event.offset] = position;
      trace.push_back({false, position++, event.bytes});
    } else if (event.op == trace_op::free) {
      const auto found = live.find(event.offset);
      if (found == live.end()) continue;
      trace.push_back({true, found->second, 0});
      live.erase(found);
    }
  }
  std::vector<alloc_kind> kinds;
  for (const auto& entry : memory::tensor_classifier::classify_trace(trace)) {
    kinds.push_back(entry.kind);
  }
  return kinds;
}

struct training_case {
  const char* model;
  const char* optimizer;
  std::int64_t batch_size;
};

/// Trains as the runtime does (runtime/training_job.cpp): weights and optimizer built under a
/// persistent scope, phase scopes inside each step (the classifier's fallbacks), the classifier
/// on the job's binding.
class TrainingWithClassifier : public ::testing::Test {
 protected:
  void build(const training_case& c) {
    models::model_options options;
    options.image_side = 16;
    options.width_multiplier = 0.5;
    options.sequence_length = 16;
    kind_scope persistent(alloc_kind::persistent);
    net_ = models::make_model(c.model, options);
    update_ = models::make_optimizer(c.optimizer, net_->parameters(), 0.01);
    net_->module().train();
  }

  /// One training step; bracketed as an iteration of the classifier when `bracketed`.
  iteration_marks step(std::int64_t batch_size, bool bracketed) {
    iteration_marks marks;
    if (bracketed) classifier_.begin_iteration();
    marks.begin = trace_.events().size();
    {
      torch::Tensor loss;
      {
        kind_scope forward(alloc_kind::feature_map);
        const auto batch = net_->make_batch(batch_size, iteration_);
        loss = net_->loss(net_->forward(batch.input), batch.target);
      }
      marks.backward = trace_.events().size();
      {
        kind_scope backward(alloc_kind::gradient);
        loss.backward();
      }
      marks.update = trace_.events().size();
      {
        // The optimizer makes its state on the first step.
        kind_scope update(iteration_ == 0 ? alloc_kind::persistent : alloc_kind::temporary);
        update_->step();
      }
      for (auto& parameter : net_->parameters()) parameter.mutable_grad() = torch::Tensor();
    }
    marks.end = trace_.events().size();
    if (bracketed) classifier_.end_iteration();
    ++iteration_;
    return marks;
  }

  [[nodiscard]] std::size_t persistent_live() const {
    return pool_.stats(job_).by_kind[index_of(alloc_kind::persistent)].live_bytes;
  }

  // Declared in the order they must be built; torn down in reverse: the model frees its
  // tensors while the binding, classifier, allocator and pool are still there.
  memory::trace_recorder trace_;
  device::cpu_backend backend_;
  std::unique_ptr<device::stream> stream_ =
      backend_.create_stream("job", device::stream_kind::compute);
  memory::device_pool pool_{backend_, pool_of(512 * MiB)};
  memory::job_id job_ = pool_.add_job("job");
  memory::tensor_classifier classifier_;
  cpu_allocator_scope installed_{pool_};
  job_binding bound_{pool_, job_, *stream_, &classifier_};
  std::unique_ptr<models::model> net_;
  std::unique_ptr<torch::optim::Optimizer> update_;
  std::uint64_t iteration_ = 0;
};

class ClassifiedKinds : public TrainingWithClassifier,
                        public ::testing::WithParamInterface<training_case> {};

TEST_P(ClassifiedKinds, LaterIterationsAreClassifiedByLifetimeNotByPhase) {
  const auto c = GetParam();
  build(c);
  pool_.set_trace_sink(&trace_);
  // As the runtime: the first step makes the optimizer's state and is not learned from, the
  // second is, the later ones get the learned kinds.
  (void)step(c.batch_size, false);
  const auto persistent_after_first = persistent_live();
  (void)step(c.batch_size, true);
  ASSERT_TRUE(classifier_.learned());
  const auto learned = classifier_.profile();
  EXPECT_EQ(learned.allocations[index_of(alloc_kind::persistent)], 0u)
      << "nothing made in a steady iteration outlives it";
  std::vector<iteration_marks> classified;
  for (int i = 0; i < 2; ++i) classified.push_back(step(c.batch_size, true));
  pool_.set_trace_sink(nullptr);
  const auto events = trace_.events();

  // The same allocations repeat: every one got its learned kind.
  EXPECT_EQ(classifier_.answers().fallback, 0u);
  EXPECT_EQ(classifier_.answers().learned, 2 * learned.iteration_allocations);

  const auto& marks = classified.back();
  const auto view = view_of(events, marks);
  ASSERT_EQ(view.allocations.size(), learned.iteration_allocations);
  std::array<std::size_t, memory::alloc_kind_count> at_peak{};
  std::size_t live_at_peak = 0;
  std::size_t relabelled = 0;
  std::size_t forward_temporaries = 0;
  for (const auto& a : view.allocations) {
    EXPECT_NE(a.kind, alloc_kind::persistent) << "no per-iteration memory becomes persistent";
    EXPECT_NE(a.kind, alloc_kind::unknown);
    if (a.event <= view.peak_event && (!a.freed || a.freed_event > view.peak_event)) {
      at_peak[index_of(a.kind)] += a.bytes;
      live_at_peak += a.bytes;
    }
    if (a.event > view.peak_event) {
      EXPECT_TRUE(a.kind == alloc_kind::gradient || a.kind == alloc_kind::temporary)
          << "made after the peak: " << memory::to_string(a.kind);
    }
    // What the phase scopes (the fallbacks) would have said.
    const auto phase_kind = a.event < marks.backward ? alloc_kind::feature_map
                            : a.event < marks.update ? alloc_kind::gradient
                                                     : alloc_kind::temporary;
    if (a.kind != phase_kind) ++relabelled;
    if (a.event < marks.backward && a.kind == alloc_kind::temporary) ++forward_temporaries;
  }
  EXPECT_GE(at_peak[index_of(alloc_kind::feature_map)], live_at_peak * 9 / 10)
      << "the bytes live at the peak are feature maps";
  EXPECT_GE(relabelled * 10, view.allocations.size())
      << "at least a tenth of the allocations get another kind than their phase's";
  EXPECT_GT(forward_temporaries, 0u) << "forward buffers freed before the peak are temporaries";

  // The kinds the pool got agree with the rule applied to this very iteration.
  const auto expected = rule_kinds(events, marks);
  ASSERT_EQ(expected.size(), view.allocations.size());
  std::size_t agree = 0;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    if (expected[i] == view.allocations[i].kind) ++agree;
  }
  EXPECT_GE(agree * 100, expected.size() * 95) << agree << " of " << expected.size();

  // Persistent state (weights, optimizer state) kept its kind and nothing joined it.
  EXPECT_GT(persistent_after_first, 0u);
  EXPECT_EQ(persistent_live(), persistent_after_first);
}

INSTANTIATE_TEST_SUITE_P(Zoo, ClassifiedKinds,
                         ::testing::Values(training_case{"resnet20", "sgd", 16},
                                           training_case{"mlp", "adam", 256},
                                           training_case{"lstm", "sgd", 8}),
                         [](const auto& test) {
                           return std::string(test.param.model) + "_" + test.param.optimizer;
                         });

TEST_F(TrainingWithClassifier, ABatchOfAnotherSizeFallsBackUntilRelearned) {
  build({"mlp", "sgd", 32});
  (void)step(32, false);
  (void)step(32, true);
  (void)step(32, true);
  EXPECT_EQ(classifier_.answers().fallback, 0u);
  const auto learned_allocations = classifier_.profile().iteration_allocations;

  // Activations change size with the batch: those positions get the scopes' kinds.
  (void)step(8, true);
  EXPECT_GT(classifier_.answers().fallback, 0u);

  classifier_.relearn();
  (void)step(8, true);  // learns again; the old table still answers meanwhile
  EXPECT_FALSE(classifier_.learning());
  (void)step(8, true);
  EXPECT_EQ(classifier_.answers().fallback, 0u);
  EXPECT_EQ(classifier_.answers().learned, classifier_.profile().iteration_allocations);
  EXPECT_EQ(classifier_.profile().iteration_allocations, learned_allocations)
      << "the same operations, on smaller tensors";
}

}  // namespace
}  // namespace tandem::torch_support
