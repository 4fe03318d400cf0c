#include "tandem/runtime/memory_monitor.hpp"

#include <gtest/gtest.h>

#include <sstream>

#include "tandem/common/units.hpp"
#include "tandem/device/cpu_backend.hpp"
#include "tandem/memory/device_pool.hpp"

namespace tandem::runtime {
namespace {

using memory::alloc_kind;

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(MemoryMonitor, FollowsLiveBytesByKindRegionsAndIterationPeaks) {
  device::cpu_backend backend;
  memory::pool_options options;
  options.capacity = 64 * MiB;
  options.region_size = 2 * MiB;
  memory::device_pool pool(backend, options);
  std::ostringstream csv;
  memory_monitor monitor(&csv);
  pool.set_trace_sink(&monitor);
  const auto job = pool.add_job("resnet, small");
  monitor.name_job(job, "resnet, small");
  auto stream = backend.create_stream("s", device::stream_kind::compute);

  void* weights = pool.allocate(job, *stream, 1 * MiB, alloc_kind::persistent);
  monitor.restart_peak_window(job);
  void* activations = pool.allocate(job, *stream, 3 * MiB, alloc_kind::feature_map);
  auto now = monitor.current(job);
  EXPECT_EQ(now.live_bytes, 4 * MiB);
  EXPECT_EQ(now.live_by_kind[memory::index_of(alloc_kind::persistent)], 1 * MiB);
  EXPECT_EQ(now.live_by_kind[memory::index_of(alloc_kind::feature_map)], 3 * MiB);
  EXPECT_EQ(now.reserved_bytes, pool.stats(job).reserved_bytes);
  pool.deallocate(job, activations);
  EXPECT_EQ(monitor.restart_peak_window(job), 4 * MiB);  // the window's peak, not the present
  EXPECT_EQ(monitor.restart_peak_window(job), 1 * MiB);  // a new window starts at live bytes
  pool.deallocate(job, weights);
  pool.detach_stream(job, *stream);
  pool.remove_job(job);
  EXPECT_EQ(monitor.current(job).reserved_bytes, 0u);
  pool.set_trace_sink(nullptr);

  const auto lines = lines_of(csv.str());
  ASSERT_GE(lines.size(), 5u);
  EXPECT_EQ(lines[0], memory_monitor::csv_header);
  // A name with a comma is quoted, so every row still has ten fields.
  EXPECT_EQ(lines[1].rfind("0.", 0), 0u) << lines[1];
  EXPECT_NE(lines[1].find(",\"resnet, small\",region_borrow,"), std::string::npos) << lines[1];
  EXPECT_NE(lines[2].find(",alloc,0,1048576,0,0,0,1048576,"), std::string::npos) << lines[2];
  EXPECT_NE(lines.back().find(",region_return,0,0,0,0,0,0,0"), std::string::npos) << lines.back();
}

TEST(MemoryMonitor, AWindowRecordsTheRegionsHeldAsAUsageCurve) {
  device::cpu_backend backend;
  memory::pool_options options;
  options.capacity = 64 * MiB;
  options.region_size = 2 * MiB;
  memory::device_pool pool(backend, options);
  memory_monitor monitor;
  pool.set_trace_sink(&monitor);
  const auto job = pool.add_job("j");
  auto stream = backend.create_stream("s", device::stream_kind::compute);
  void* kept = pool.allocate(job, *stream, 1 * MiB, alloc_kind::persistent);
  monitor.restart_window(job);  // the iteration starts holding the persistent region
  void* big = pool.allocate(job, *stream, 6 * MiB, alloc_kind::feature_map);
  pool.deallocate(job, big);
  pool.poll(job);
  const auto window = monitor.restart_window(job);
  EXPECT_EQ(window.held.held_at_start, 2 * MiB);
  EXPECT_EQ(window.held.peak(), 8 * MiB);
  EXPECT_EQ(window.held.held_at_end(), 2 * MiB);
  ASSERT_FALSE(window.held.steps.empty());
  EXPECT_GT(window.held.steps.front().delta, 0);
  EXPECT_GE(window.held.duration_s, window.held.steps.back().at_s);
  pool.deallocate(job, kept);
  pool.detach_stream(job, *stream);
  pool.remove_job(job);
  pool.set_trace_sink(nullptr);
}

TEST(MemoryMonitor, AnAttachedSinkGetsItsJobsEventsOnlyUntilDetached) {
  device::cpu_backend backend;
  memory::pool_options options;
  options.capacity = 64 * MiB;
  options.region_size = 2 * MiB;
  memory::device_pool pool(backend, options);
  memory_monitor monitor;
  pool.set_trace_sink(&monitor);
  const auto a = pool.add_job("a");
  const auto b = pool.add_job("b");
  auto stream = backend.create_stream("s", device::stream_kind::compute);
  memory::trace_recorder of_a;
  monitor.attach(a, &of_a);
  void* x = pool.allocate(a, *stream, 1 * MiB, alloc_kind::feature_map);
  void* y = pool.allocate(b, *stream, 1 * MiB, alloc_kind::feature_map);
  pool.deallocate(a, x);
  monitor.detach(a);
  void* z = pool.allocate(a, *stream, 1 * MiB, alloc_kind::feature_map);
  pool.deallocate(a, z);
  pool.deallocate(b, y);

  const auto events = of_a.events();
  std::size_t allocs = 0;
  std::size_t frees = 0;
  for (const auto& event : events) {
    EXPECT_EQ(event.job, a);
    allocs += event.op == memory::trace_op::alloc ? 1 : 0;
    frees += event.op == memory::trace_op::free ? 1 : 0;
  }
  EXPECT_EQ(allocs, 1u);  // x only: y is b's, z came after detach
  EXPECT_EQ(frees, 1u);
  // The monitor itself still saw everything.
  EXPECT_EQ(monitor.current(a).live_bytes, 0u);
  EXPECT_EQ(monitor.restart_peak_window(b), 1 * MiB);
  for (const auto job : {a, b}) {
    pool.detach_stream(job, *stream);
    pool.remove_job(job);
  }
  pool.set_trace_sink(nullptr);
}

TEST(MemoryMonitor, AnUnknownJobHasNothing) {
  memory_monitor monitor;
  EXPECT_EQ(monitor.current(42).live_bytes, 0u);
  EXPECT_EQ(monitor.restart_peak_window(42), 0u);
}

}  // namespace
}  // namespace tandem::runtime
