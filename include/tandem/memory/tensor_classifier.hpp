#pragma once
// Learns the kind of each allocation from what a job does, not from phase scopes that know the
// framework (Zico §6.2). Training repeats the same allocations every iteration, so the classifier
// watches one whole iteration, classifies each of its allocations by lifetime, and then tags the
// i-th allocation of later iterations with what the i-th allocation was learned to be.
//
// Rules, with the iteration's peak of live bytes taken as the start of backward; the first that
// matches wins:
// - persistent:  not freed by the end of the iteration it was made in;
// - feature_map: live at the peak (made before it, freed after it);
// - temporary:   freed before the peak, or short-lived: freed within a few allocations of being
//                made (see short_lived_fraction);
// - gradient:    made after the peak and not short-lived.
// Being live at the peak wins over being short-lived: those bytes make the peak, which is what
// the pool and the schedulers plan for. An LSTM's last steps, for one, are made just before the
// peak and freed early in backward; calling them temporary would put most of its peak there.
//
// Use, for every allocation of the job: classify(bytes, fallback) gives the kind to allocate
// with, then on_allocate(ptr, bytes) once the allocation succeeded; on_free(ptr) before the
// memory is freed. Bracket iterations with begin_iteration()/end_iteration(). Allocations made
// outside an iteration (building the model) get their fallback and are neither learned nor
// counted.
//
// Thread safety: none. A classifier belongs to one job and is used from that job's thread only
// (the thread its job_binding lives on), so it takes no locks.

#include <array>
#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "tandem/memory/alloc_kind.hpp"

namespace tandem::memory {

/// What the classifier learned from its learning iteration, by kind.
struct learned_profile {
  std::array<std::size_t, alloc_kind_count> allocations{};  ///< count per kind
  std::array<std::size_t, alloc_kind_count> bytes{};        ///< requested bytes per kind
  std::size_t iteration_allocations = 0;  ///< allocations of the learning iteration
  std::size_t peak_position = 0;          ///< position of the allocation that made the peak
  std::size_t peak_live_bytes = 0;        ///< bytes of the iteration's allocations live then
};

/// One allocation of the learned iteration, by position.
struct learned_allocation {
  std::size_t bytes = 0;
  alloc_kind kind = alloc_kind::unknown;
};

/// How the allocations since learning were answered (counts).
struct classifier_answers {
  std::uint64_t learned = 0;   ///< got the learned kind of their position
  std::uint64_t fallback = 0;  ///< got the caller's kind: the size or position did not match
};

class tensor_classifier {
 public:
  /// An allocation not live at the peak is short-lived (temporary) when fewer than this fraction
  /// of the iteration's allocations are made while it lives (at least one: an allocation freed
  /// before the next one is made is always short-lived). Lifetimes are counted in allocation
  /// events, not seconds: the same trace gives the same table whatever the device's speed, the
  /// other jobs sharing it, or timer noise, and the rule stays exactly checkable in tests.
  static constexpr double short_lived_fraction = 0.02;

  /// Starts an iteration. One begun while another is open abandons the open one (an exception
  /// cut it short); a learning iteration then learns from the next one instead.
  void begin_iteration();
  /// Ends the iteration; the first complete one (or the first after relearn()) is learned from.
  /// Throws usage_error when no iteration is open.
  void end_iteration();

  /// The kind to allocate `bytes` with: the learned kind of the next position when learned and
  /// the sizes match, `fallback` otherwise. Does not advance the position.
  [[nodiscard]] alloc_kind classify(std::size_t bytes, alloc_kind fallback) const noexcept;
  /// Counts the allocation (and records it while learning). Allocations of 0 bytes or with no
  /// pointer are ignored: the pool gives them no memory and they are never freed.
  void on_allocate(const void* ptr, std::size_t bytes) noexcept;
  /// Called before `ptr` is freed; pointers the classifier does not follow are ignored.
  void on_free(const void* ptr) noexcept;

  /// Whether a table was learned (it stays in use while relearning).
  [[nodiscard]] bool learned() const { return learned_; }
  /// Learns again from the next complete iteration, e.g. after the model or batch changed; the
  /// current table answers until then.
  void relearn() { learning_requested_ = true; }
  [[nodiscard]] bool learning() const { return !learned_ || learning_requested_; }

  [[nodiscard]] const std::vector<learned_allocation>& table() const { return table_; }
  [[nodiscard]] const learned_profile& profile() const { return profile_; }
  [[nodiscard]] const classifier_answers& answers() const { return answers_; }

  /// The rule above applied to one iteration's trace; what learning runs on, public so that
  /// tests can check traces against it. Each event is an allocation (bytes > 0) or the free of
  /// an earlier allocation of the trace, by its position.
  struct trace_step {
    bool is_free = false;
    std::size_t position = 0;  ///< free: which allocation of the trace
    std::size_t bytes = 0;     ///< allocation: its size
  };
  [[nodiscard]] static std::vector<learned_allocation> classify_trace(
      const std::vector<trace_step>& events, learned_profile* profile = nullptr);

 private:
  void learn();

  bool learned_ = false;
  bool learning_requested_ = false;
  bool in_iteration_ = false;
  bool recording_ = false;    // this iteration is being learned from
  std::size_t position_ = 0;  // allocations counted in the open iteration
  std::vector<learned_allocation> table_;
  learned_profile profile_;
  classifier_answers answers_;
  // The learning iteration: its events and the positions of its live allocations by address.
  std::vector<trace_step> events_;
  std::unordered_map<const void*, std::size_t> live_;
};

}  // namespace tandem::memory
