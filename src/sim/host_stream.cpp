#include "host_stream.hpp"

#include <algorithm>
#include <limits>

namespace tandem::sim::detail {
namespace {

constexpr double never = std::numeric_limits<double>::infinity();

/// Below any cost the model charges, above the rounding of a clock at 10^6 s: what is left of
/// a stage after an event that should have finished it.
constexpr double slack_s = 1e-10;

/// `done` seconds of a `total` count as all of it within rounding.
bool finished(double done, double total) {
  return done >= total - slack_s;
}

}  // namespace

bool stream_cursor::settle(const std::vector<stream_stage>& stages, std::size_t in_flight) {
  bool moved = false;
  for (bool again = true; again;) {
    again = false;
    // A stage the host has issued in full moves the host on; one without host time is issued
    // at once, if the in-flight limit lets the host that far ahead.
    while (host_stage < stages.size() && finished(host_into, stages[host_stage].host_s) &&
           (stages[host_stage].host_s > 0 || in_flight == 0 ||
            host_stage < device_stage + in_flight)) {
      ++host_stage;
      host_into = 0;
      again = true;
    }
    while (device_stage < host_stage && finished(device_into, stages[device_stage].device_s)) {
      ++device_stage;
      device_into = 0;
      again = true;
    }
    moved = moved || again;
  }
  return moved;
}

bool stream_cursor::host_busy(const std::vector<stream_stage>& stages,
                              std::size_t in_flight) const {
  return host_stage < stages.size() && (in_flight == 0 || host_stage < device_stage + in_flight) &&
         !finished(host_into, stages[host_stage].host_s);
}

bool stream_cursor::device_caught_up(const std::vector<stream_stage>& stages) const {
  if (device_stage != host_stage || device_stage >= stages.size()) return false;
  const auto& s = stages[device_stage];
  if (s.device_s <= 0 || s.host_s <= 0) return true;
  return device_into >= host_into / s.host_s * s.device_s - slack_s;
}

double stream_cursor::device_demand(const std::vector<stream_stage>& stages,
                                    double host_rate) const {
  if (device_stage >= stages.size() || stages[device_stage].device_s <= 0) return 0;
  if (device_ahead_of_host() || !device_caught_up(stages)) return 1;
  const auto& s = stages[device_stage];
  // The device runs the stage as fast as the host issues it: device seconds per second.
  return std::min(1.0, host_rate * s.device_s / s.host_s);
}

double stream_cursor::time_to_next(const std::vector<stream_stage>& stages, double host_rate,
                                   double device_rate, double device_target) const {
  double next = never;
  if (host_rate > 0 && host_stage < stages.size())
    next = std::max(0.0, stages[host_stage].host_s - host_into) / host_rate;
  if (device_stage >= stages.size() || device_rate <= 0) return next;
  const auto& s = stages[device_stage];
  const double limit = std::min(device_target, s.device_s);
  if (device_stage == host_stage && s.host_s > 0) {
    const double cap = host_into / s.host_s * s.device_s;  // how far the host has issued
    const double cap_rate = host_rate * s.device_s / s.host_s;
    if (device_into < cap - slack_s) {
      if (device_rate > cap_rate)
        next = std::min(next, (cap - device_into) / (device_rate - cap_rate));
      next = std::min(next, std::max(0.0, limit - device_into) / device_rate);
    } else {
      const double rate = std::min(device_rate, cap_rate);
      if (rate > 0) next = std::min(next, std::max(0.0, limit - device_into) / rate);
    }
    return next;
  }
  return std::min(next, std::max(0.0, limit - device_into) / device_rate);
}

void stream_cursor::advance(const std::vector<stream_stage>& stages, double dt, double host_rate,
                            double device_rate, double device_target) {
  if (host_rate > 0 && host_stage < stages.size()) {
    const double total = stages[host_stage].host_s;
    host_into = std::min(total, host_into + host_rate * dt);
    if (finished(host_into, total)) host_into = total;
  }
  if (device_stage >= stages.size() || device_rate <= 0) return;
  const auto& s = stages[device_stage];
  double limit = std::min(device_target, s.device_s);
  if (device_stage == host_stage && s.host_s > 0)
    limit = std::min(limit, host_into / s.host_s * s.device_s);
  const double reached = device_into + device_rate * dt;
  device_into = finished(reached, limit) ? limit : std::min(reached, limit);
}

std::vector<double> solo_completions(const std::vector<stream_stage>& stages,
                                     std::size_t in_flight) {
  std::vector<double> completions(stages.size(), 0);
  stream_cursor cursor;
  double now = 0;
  std::size_t recorded = 0;
  for (;;) {
    cursor.settle(stages, in_flight);
    for (; recorded < cursor.device_stage; ++recorded) completions[recorded] = now;
    if (cursor.done(stages)) break;
    const double host_rate = cursor.host_busy(stages, in_flight) ? 1.0 : 0.0;
    const double device_rate = cursor.device_demand(stages, host_rate);
    const double dt = cursor.time_to_next(stages, host_rate, device_rate, never);
    if (dt == never) break;  // cannot happen: something always moves until the end
    now += dt;
    cursor.advance(stages, dt, host_rate, device_rate, never);
  }
  return completions;
}

}  // namespace tandem::sim::detail
