// Note [CBC in a child process]: Debian's CBC 2.10 links a Clp 1.17 built with assertions, and
// one of them, in OsiClpSolverInterface::crunch (which cuts an LP down to its unfixed part), can
// fail on an LP of at most two rows and two columns (coin-or/Clp#288, coin-or/Cbc#684): the
// failed assertion aborts the whole process. Branch and bound crunches when mipOptions says so
// (CBC's default, 1057, does; 1056 here does not), but CBC's heuristics (feasibility pump, RINS,
// ...) and restarts solve sub-programs with crunch turned back on whatever the options say,
// when the program has fewer than 300 rows and 500 columns, and presolve can leave such a
// sub-program two rows: SqueezeNet's programs near batch 61728 did. (Clp's "keep simple" bit,
// which would keep them off crunch, breaks CBC's hot starts.) So CBC solves in a forked child
// that leaves its answer in memory shared with the parent; the child runs nothing but CBC,
// whose allocations glibc keeps working after a fork in a threaded process. A child that dies
// found nothing, and the solve is tried once more without heuristics, so without their
// sub-programs, for the time left. A child that overruns its time limit by more than a grace is
// killed and found nothing.

#include "integer_program.hpp"

#include <Cbc_C_Interface.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <string>
#include <thread>

#include "tandem/common/error.hpp"

namespace tandem::footprint::detail {

namespace {

using clock = std::chrono::steady_clock;

/// How far past its time limit a child may run (CBC checks its limit between nodes).
constexpr double overrun_grace_s = 5;

/// What a child's solve leaves in the shared memory, followed by the column values when found.
/// `complete` is written last: a child that died before it reported nothing.
struct report_header {
  int found = 0;
  int proven_optimal = 0;
  double objective = 0;
  double bound = 0;
  int complete = 0;
};

/// Anonymous memory a forked child writes and its parent reads.
class shared_memory {
 public:
  explicit shared_memory(std::size_t bytes)
      : bytes_(bytes),
        at_(::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0)) {
    TANDEM_EXPECTS(at_ != MAP_FAILED, error,
                   std::string("the optimal planner could not map memory for CBC's answer (") +
                       std::strerror(errno) + "); free memory or use another planner");
  }
  ~shared_memory() { ::munmap(at_, bytes_); }
  shared_memory(const shared_memory&) = delete;
  shared_memory& operator=(const shared_memory&) = delete;

  [[nodiscard]] report_header* header() const { return static_cast<report_header*>(at_); }
  [[nodiscard]] double* values() const { return reinterpret_cast<double*>(header() + 1); }

 private:
  std::size_t bytes_;
  void* at_;
};

/// The child's side. CBC's messages and a failed assertion's go nowhere: a child that dies is a
/// solve that found nothing. Stopping on SIGINT or SIGTERM is the parent's business.
[[noreturn]] void solve_and_report(Cbc_Model* model, int columns, const shared_memory& memory) {
  std::signal(SIGINT, SIG_IGN);
  std::signal(SIGTERM, SIG_IGN);
  const int nowhere = ::open("/dev/null", O_WRONLY);
  if (nowhere >= 0) {
    ::dup2(nowhere, STDOUT_FILENO);
    ::dup2(nowhere, STDERR_FILENO);
  }
  Cbc_solve(model);
  const double* values = Cbc_getColSolution(model);
  auto& header = *memory.header();
  header.found =
      values != nullptr && !Cbc_isProvenInfeasible(model) && Cbc_numberSavedSolutions(model) > 0;
  header.proven_optimal = Cbc_isProvenOptimal(model) != 0;
  header.objective = Cbc_getObjValue(model);
  header.bound = Cbc_getBestPossibleObjValue(model);
  if (header.found) std::copy(values, values + columns, memory.values());
  header.complete = 1;
  ::_exit(0);
}

/// Waits for `child` to end until `deadline`, and kills it then; false when it was killed.
bool wait_until(pid_t child, clock::time_point deadline, const std::stop_token& stop) {
  auto pause = std::chrono::microseconds(100);
  for (;;) {
    int status = 0;
    const pid_t got = ::waitpid(child, &status, WNOHANG);
    if (got == child || (got < 0 && errno == ECHILD)) return true;  // ECHILD: reaped elsewhere
    if (clock::now() >= deadline || stop.stop_requested()) {
      ::kill(child, SIGKILL);
      while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
      }
      return false;
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(10000));
  }
}

}  // namespace

struct integer_program::solver {
  Cbc_Model* model = Cbc_newModel();
  solver() { Cbc_setLogLevel(model, 0); }
  ~solver() { Cbc_deleteModel(model); }
  solver(const solver&) = delete;
  solver& operator=(const solver&) = delete;
};

integer_program::integer_program() : solver_(std::make_unique<solver>()) {}
integer_program::~integer_program() = default;

int integer_program::binary(double cost) {
  Cbc_addCol(solver_->model, "", 0, 1, cost, 1, 0, nullptr, nullptr);
  return columns_++;
}

int integer_program::continuous(double lower, double upper, double cost) {
  Cbc_addCol(solver_->model, "", lower, upper, cost, 0, 0, nullptr, nullptr);
  return columns_++;
}

void integer_program::at_most(row r, double rhs) {
  if (r.columns.empty()) return;
  Cbc_addRow(solver_->model, "", static_cast<int>(r.columns.size()), r.columns.data(),
             r.values.data(), 'L', rhs);
}

bool integer_program::solve(double seconds, double gap, std::stop_token stop) {
  auto* model = solver_->model;
  Cbc_setAllowableFractionGap(model, gap);
  Cbc_setParameter(model, "threads", "1");         // deterministic, and the machine is shared
  Cbc_setParameter(model, "timeMode", "elapsed");  // the limit is wall-clock seconds
  Cbc_setParameter(model, "preprocess", "off");
  Cbc_setParameter(model, "mipOptions", "1056");  // no crunch in branch and bound (the note)
  const auto started = clock::now();
  auto outcome = solve_in_child(seconds, stop);
  const std::chrono::duration<double> spent = clock::now() - started;
  if (outcome == child_outcome::died && seconds - spent.count() > 0) {
    Cbc_setParameter(model, "heuristicsOnOff", "off");  // their sub-programs crunch
    outcome = solve_in_child(seconds - spent.count(), stop);
  }
  return outcome == child_outcome::found;
}

integer_program::child_outcome integer_program::solve_in_child(double seconds,
                                                               const std::stop_token& stop) {
  if (stop.stop_requested()) return child_outcome::stopped;
  seconds = std::max(seconds, 0.01);
  Cbc_setMaximumSeconds(solver_->model, seconds);
  const shared_memory memory(sizeof(report_header) +
                             static_cast<std::size_t>(columns_) * sizeof(double));
  const auto deadline =
      clock::now() + std::chrono::duration_cast<clock::duration>(
                         std::chrono::duration<double>(seconds + overrun_grace_s));
  const pid_t child = ::fork();
  TANDEM_EXPECTS(child >= 0, error,
                 std::string("the optimal planner could not start a process for CBC (") +
                     std::strerror(errno) + "); allow more processes or use another planner");
  if (child == 0) solve_and_report(solver_->model, columns_, memory);
  if (!wait_until(child, deadline, stop))
    return stop.stop_requested() ? child_outcome::stopped : child_outcome::overran;
  const auto& header = *memory.header();
  if (!header.complete) return child_outcome::died;
  if (!header.found) return child_outcome::found_nothing;
  proven_optimal_ = header.proven_optimal != 0;
  objective_ = header.objective;
  bound_ = header.bound;
  values_.assign(memory.values(), memory.values() + columns_);
  return child_outcome::found;
}

double integer_program::value(int column) const {
  return values_.at(static_cast<std::size_t>(column));
}

}  // namespace tandem::footprint::detail
