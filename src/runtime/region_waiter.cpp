#include "tandem/runtime/region_waiter.hpp"

#include <chrono>

#include "tandem/runtime/policy_gate.hpp"
#include "tandem/runtime/restartable_scope.hpp"
#include "tandem/torch/job_thread_scope.hpp"

namespace tandem::runtime {

namespace {

// A wait also ends after this long: the arbiter may let a waiting job through because every
// other job came to wait too, which no return announces. Retrying costs one search of the
// job's own area.
constexpr auto longest_wait = std::chrono::milliseconds(10);

}  // namespace

bool region_waiter::try_reserve(memory::job_id job, std::size_t bytes) noexcept {
  if (arbiter_ == nullptr) return true;  // the budget decides
  try {
    return arbiter_->try_reserve(job, bytes);
  } catch (...) {
    return false;  // out of memory for the policy's books: refuse, the job fails or waits
  }
}

void region_waiter::cancel(memory::job_id job, std::size_t bytes) noexcept {
  try {
    if (arbiter_ != nullptr) arbiter_->cancel(job, bytes);
  } catch (...) {
  }
  changed();
}

void region_waiter::returned(memory::job_id job, std::size_t bytes) noexcept {
  try {
    if (arbiter_ != nullptr) arbiter_->returned(job, bytes);
  } catch (...) {
  }
  changed();
}

void region_waiter::changed() noexcept {
  {
    std::lock_guard lock(mutex_);
    ++changes_;
  }
  returns_.notify_all();
}

memory::wait_answer region_waiter::wait_for_regions(memory::job_id job, std::size_t bytes,
                                                    const memory::own_room& room) {
  if (gate_.stop_requested()) {
    throw run_stopped("stopped while waiting for regions: the run was asked to stop");
  }
  // Not on a thread no job owns (libtorch's autograd thread on CUDA, which every job's backward
  // pass needs): the job that would return the memory could never finish. It fails instead.
  if (!torch_support::job_thread_scope::here()) return memory::wait_answer::fail;
  std::unique_lock lock(mutex_);
  const auto seen = changes_;
  lock.unlock();
  // No restart is worth its rerun where a refused wait has somewhere else to go: another
  // class's free block, or a caller that copes (a swap-in whose reader reads from host memory).
  const bool falls_back = room.another_class_fits || room.caller_falls_back;
  const bool restartable = may_restart_here() && !falls_back;
  switch (
      gate_.memory_wait(job, restartable, bytes, room.free_bytes, room.can_make_room, falls_back)) {
    case schedule::memory_wait_verdict::keep_waiting:
      break;
    case schedule::memory_wait_verdict::make_room:
      return memory::wait_answer::make_room;
    case schedule::memory_wait_verdict::restart_iteration:
      throw iteration_restarted(
          "no wait would bring the memory asked for (every running iteration waits for another, "
          "or the job's own regions hold room only in pieces): this one lets go and runs again");
    case schedule::memory_wait_verdict::give_up:
      return memory::wait_answer::fail;
  }
  lock.lock();
  returns_.wait_for(lock, longest_wait, [&] { return changes_ != seen; });
  return memory::wait_answer::try_again;
}

void region_waiter::wait_ended(memory::job_id job) noexcept {
  gate_.memory_wait_ended(job);
}

}  // namespace tandem::runtime
