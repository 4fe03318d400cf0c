#pragma once
// A job's host thread and its device stream, advanced together (docs/simulator.md, "Host and
// device"). Note [Host runs ahead]: an operation costs host time (framework dispatch and kernel
// launches, on one host core, no device fill) and device time (its kernels, at its fill). The
// host issues operations in order; the device runs each as far as the host has issued it (a fluid
// model: an operation of many kernels starts on the device as soon as its first is issued, and
// never gets ahead of the host); the host may run at most `in_flight` operations ahead of the
// last one the device completed (Zico §6.1; 0: no limit). An operation with no host time is
// issued at once; one with no device time completes as soon as it is issued. Host and device
// idle time is what a co-located job can fill.
//
// The profile generator times a solo iteration with this cursor (every rate 1) and the simulator
// advances every running job's cursor at the rates that contention leaves it, so a solo job in
// the simulator takes exactly its profile's time.

#include <cstddef>
#include <vector>

namespace tandem::sim::detail {

/// One operation (or a run of operations with the same fill) as the cursor sees it.
struct stream_stage {
  double host_s = 0;    ///< host seconds to issue it, alone on a core
  double device_s = 0;  ///< device seconds to run it, alone on the device
};

/// Where a job's host and device are within one iteration.
struct stream_cursor {
  std::size_t host_stage = 0;    ///< the stage the host issues; stages before it are issued
  double host_into = 0;          ///< host seconds of host_stage done
  std::size_t device_stage = 0;  ///< the stage the device runs; stages before it are complete
  double device_into = 0;        ///< device seconds of device_stage done

  /// Issues and completes whatever needs no time: stages without host time up to the in-flight
  /// limit, finished host stages, device stages finished and issued. Returns whether it moved.
  bool settle(const std::vector<stream_stage>& stages, std::size_t in_flight);

  [[nodiscard]] bool done(const std::vector<stream_stage>& stages) const {
    return device_stage >= stages.size();
  }
  /// The host has an operation to issue and the in-flight limit lets it.
  [[nodiscard]] bool host_busy(const std::vector<stream_stage>& stages,
                               std::size_t in_flight) const;
  /// The device works on a stage the host has issued in full (it cannot catch up with the host
  /// within it).
  [[nodiscard]] bool device_ahead_of_host() const { return device_stage < host_stage; }
  /// In the stage the host is issuing, the device has done as large a share as the host.
  [[nodiscard]] bool device_caught_up(const std::vector<stream_stage>& stages) const;

  /// The share of its solo device speed the job can use: 1, or less when the device has caught
  /// up with a host that issues slower than the device runs (`host_rate`: host seconds per
  /// second). 0 when the device has nothing to run.
  [[nodiscard]] double device_demand(const std::vector<stream_stage>& stages,
                                     double host_rate) const;

  /// Seconds until the next change of rates: the host finishes its stage, the device finishes
  /// its stage or reaches `device_target` device seconds into it, or the device catches up with
  /// the host. Rates are host and device seconds per second. Infinity when nothing moves.
  [[nodiscard]] double time_to_next(const std::vector<stream_stage>& stages, double host_rate,
                                    double device_rate, double device_target) const;

  /// Moves both on by `dt` seconds at those rates, the device never past `device_target`, the
  /// end of its stage or the host.
  void advance(const std::vector<stream_stage>& stages, double dt, double host_rate,
               double device_rate, double device_target);
};

/// When each stage completes on the device in a solo iteration (host and device at full speed),
/// seconds from the iteration's start; the last is the solo iteration.
[[nodiscard]] std::vector<double> solo_completions(const std::vector<stream_stage>& stages,
                                                   std::size_t in_flight);

}  // namespace tandem::sim::detail
