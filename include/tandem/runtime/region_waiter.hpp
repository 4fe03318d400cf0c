#pragma once
// The runtime's memory waits (schedule/policy_driver.hpp, "Memory waits"): it sits in the pool
// as its borrow_gate under every policy but the fails_on_oom baselines, passes every borrow and
// return to the policy when it judges them (schedule/borrow_arbiter.hpp, scrooge), and makes an
// allocation the budget or the policy refused wait on the job's own thread (inside libtorch's
// allocation call) while the driver says waiting can help, trying again as regions come back.
// The simulator blocks a job the same way at the same points; the driver decides both.

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
  /// `arbiter`: the policy, when it judges borrows (nullptr: the budget alone). `gate`: whether
  /// waiting can help, and a stop requested there ends a wait with run_stopped. Both must
  /// outlive the waiter.
  region_waiter(schedule::borrow_arbiter* arbiter, policy_gate& gate)
      : arbiter_(arbiter), gate_(gate) {}

  [[nodiscard]] bool try_reserve(memory::job_id job, std::size_t bytes) noexcept override;
  void cancel(memory::job_id job, std::size_t bytes) noexcept override;
  void returned(memory::job_id job, std::size_t bytes) noexcept override;
  [[nodiscard]] memory::wait_answer wait_for_regions(memory::job_id job, std::size_t bytes,
                                                     const memory::own_room& room) override;
  void wait_ended(memory::job_id job) noexcept override;

 private:
  void changed() noexcept;

  schedule::borrow_arbiter* arbiter_;
  policy_gate& gate_;
  std::mutex mutex_;
  std::condition_variable returns_;
  std::uint64_t changes_ = 0;  // guarded by mutex_: counts returns and cancellations
};

}  // namespace tandem::runtime
