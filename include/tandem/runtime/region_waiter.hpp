#pragma once
// The runtime's side of a policy that judges region borrows (schedule/borrow_arbiter.hpp): it
// sits in the pool as its borrow_gate, passes every borrow and return to the policy, and makes
// a refused allocation wait on the job's own thread (inside libtorch's allocation call) until
// another job returns regions, then try again. The simulator blocks a job the same way at the
// same points; the policy's answers decide both.

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>

#include "tandem/memory/borrow_gate.hpp"
#include "tandem/schedule/borrow_arbiter.hpp"

namespace tandem::runtime {

class policy_gate;

class region_waiter final : public memory::borrow_gate {
 public:
  /// `gate`: a stop requested there ends a wait with run_stopped. Both must outlive the waiter.
  region_waiter(schedule::borrow_arbiter& arbiter, const policy_gate& gate)
      : arbiter_(arbiter), gate_(gate) {}

  [[nodiscard]] bool try_reserve(memory::job_id job, std::size_t bytes) noexcept override;
  void cancel(memory::job_id job, std::size_t bytes) noexcept override;
  void returned(memory::job_id job, std::size_t bytes) noexcept override;
  [[nodiscard]] bool wait_for_regions(memory::job_id job, std::size_t bytes) override;

 private:
  void changed() noexcept;

  schedule::borrow_arbiter& arbiter_;
  const policy_gate& gate_;
  std::mutex mutex_;
  std::condition_variable returns_;
  std::uint64_t changes_ = 0;  // guarded by mutex_: counts returns and cancellations
};

}  // namespace tandem::runtime
