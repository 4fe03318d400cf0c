#pragma once
// Marks, on a job's own thread, the stretch of an iteration that the job can roll back to the
// iteration's start: a memory wait there may end with iteration_restarted (policy_gate.hpp)
// instead of failing the job when every running iteration waits for another
// (schedule/policy_driver.hpp, "Memory waits"). A training job marks its forward and backward
// passes; a user's loop marks what it chooses (api::iteration_scope::restartable, its forward
// pass); elsewhere (the model's build, an optimizer step that has changed some weights) nothing
// is marked and the wait is judged as one that cannot restart.
//
// A restart chosen inside one of tandem's operation callbacks (a plan's swap-in needed by the
// operation about to run) does not cut the iteration there: libtorch swallows what a callback
// throws, and the callback keeps it. Only a scope whose holder calls throw_if_kept() before it
// leaves the restartable stretch (the trainer, before its optimizer step) lets such a wait
// restart; the iteration runs on to that point, its next refused allocation cutting it sooner.

namespace tandem::runtime {

class restartable_scope {
 public:
  /// `checks_kept`: the holder calls throw_if_kept() before anything it cannot roll back.
  explicit restartable_scope(bool checks_kept = false)
      : outer_inside_(inside_), outer_checks_(checks_kept_) {
    inside_ = true;
    checks_kept_ = checks_kept;
    kept_ = false;
  }
  ~restartable_scope() {
    inside_ = outer_inside_;
    checks_kept_ = outer_checks_;
  }
  restartable_scope(const restartable_scope&) = delete;
  restartable_scope& operator=(const restartable_scope&) = delete;

  /// Whether the calling thread is inside a restartable stretch.
  [[nodiscard]] static bool here() { return inside_; }
  /// Whether a restart chosen inside an operation callback is acted on here (see above).
  [[nodiscard]] static bool surfaces_kept() { return inside_ && checks_kept_; }
  /// A restart was thrown inside an operation callback, which kept it.
  static void keep() { kept_ = true; }
  /// Throws what keep() noted, as the restart it is; the holder's caller rolls back.
  void throw_if_kept();

 private:
  static inline thread_local bool inside_ = false;
  static inline thread_local bool checks_kept_ = false;
  static inline thread_local bool kept_ = false;
  bool outer_inside_;
  bool outer_checks_;
};

}  // namespace tandem::runtime
