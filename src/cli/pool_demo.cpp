#include "pool_demo.hpp"

#include <fmt/format.h>

#include <chrono>
#include <mutex>
#include <ostream>
#include <thread>
#include <vector>

#include "tandem/common/units.hpp"
#include "tandem/device/cpu_backend.hpp"
#include "tandem/memory/device_pool.hpp"

namespace tandem::cli {

namespace {

using namespace std::chrono_literals;
using memory::alloc_kind;

/// A synthetic training iteration: the forward pass allocates a feature map per layer (with a
/// short-lived temporary each), the backward pass frees them in reverse and makes gradients.
/// Every "kernel" touches its memory on the job's stream and takes a little device time.
void run_iteration(memory::device_pool& pool, memory::job_id job, device::stream& stream,
                   const pool_demo_options& options) {
  auto kernel = [&](void* ptr, std::size_t bytes) {
    stream.memset_async(ptr, 0x5a, std::min<std::size_t>(bytes, 64 * KiB));
    stream.launch_host([] { std::this_thread::sleep_for(2ms); });
  };
  std::vector<void*> feature_maps;
  for (std::size_t layer = 0; layer < options.layers; ++layer) {
    const std::size_t bytes = options.layer_bytes * (options.layers - layer) / options.layers;
    void* fm = pool.allocate(job, stream, bytes, alloc_kind::feature_map);
    void* scratch = pool.allocate(job, stream, 256 * KiB, alloc_kind::temporary);
    kernel(fm, bytes);
    pool.deallocate(job, scratch);
    feature_maps.push_back(fm);
  }
  for (std::size_t layer = options.layers; layer-- > 0;) {
    const std::size_t bytes = options.layer_bytes * (options.layers - layer) / options.layers;
    void* grad = pool.allocate(job, stream, bytes / 2, alloc_kind::gradient);
    kernel(grad, bytes / 2);
    pool.deallocate(job, feature_maps[layer]);
    pool.deallocate(job, grad);
  }
  pool.poll(job);
}

}  // namespace

int run_pool_demo(const pool_demo_options& options, std::ostream& out) {
  device::cpu_backend backend;
  memory::pool_options settings;
  settings.capacity = options.capacity;
  settings.budget = options.budget;
  settings.region_size = options.region_size;
  memory::device_pool pool(backend, settings);
  out << fmt::format("device: {}\npool: capacity {}, budget {}, regions of {}\n",
                     backend.describe(), format_bytes(pool.stats().capacity),
                     format_bytes(pool.budget()), format_bytes(settings.region_size));

  std::mutex out_mutex;
  std::vector<memory::job_id> ids;
  std::vector<std::string> failures(options.jobs);
  for (std::size_t j = 0; j < options.jobs; ++j)
    ids.push_back(pool.add_job(fmt::format("job{}", j)));

  const auto started = std::chrono::steady_clock::now();
  std::vector<std::thread> workers;
  for (std::size_t j = 0; j < options.jobs; ++j) {
    workers.emplace_back([&, j] {
      auto stream = backend.create_stream(fmt::format("job{}", j), device::stream_kind::compute);
      const auto params = pool.allocate(ids[j], *stream, 8 * MiB, alloc_kind::persistent);
      try {
        for (std::size_t it = 0; it < options.iterations; ++it) {
          if (it == 0 && j > 0) {
            // Start late so that the jobs' peaks fall at different times.
            std::this_thread::sleep_for(
                std::chrono::duration<double>(options.stagger * static_cast<double>(j) * 0.05 *
                                              static_cast<double>(options.layers)));
          }
          run_iteration(pool, ids[j], *stream, options);
          const auto stats = pool.stats(ids[j]);
          std::lock_guard lock(out_mutex);
          out << fmt::format("  job{} iteration {}/{}: peak {} live, {} in regions\n", j, it + 1,
                             options.iterations, format_bytes(stats.peak_live_bytes),
                             format_bytes(stats.reserved_bytes));
        }
      } catch (const memory::out_of_memory_error& oom) {
        failures[j] = oom.what();
      }
      stream->synchronize();
      pool.deallocate(ids[j], params);
      pool.detach_stream(ids[j], *stream);
    });
  }
  for (auto& worker : workers) worker.join();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();

  out << fmt::format("\n{:<6} {:>12} {:>14} {:>9} {:>9} {:>11} {:>9} {:>7}  {}\n", "job",
                     "peak live", "peak regions", "borrowed", "returned", "same-strm", "synced",
                     "events", "result");
  int failed = 0;
  for (std::size_t j = 0; j < options.jobs; ++j) {
    const auto s = pool.stats(ids[j]);
    out << fmt::format("{:<6} {:>12} {:>14} {:>9} {:>9} {:>11} {:>9} {:>7}  {}\n",
                       pool.job_name(ids[j]), format_bytes(s.peak_live_bytes),
                       format_bytes(s.peak_reserved_bytes), s.regions_borrowed, s.regions_returned,
                       s.same_stream_reuses, s.synced_reuses, s.events_recorded,
                       failures[j].empty() ? "completed" : "out of memory");
    if (!failures[j].empty()) ++failed;
  }
  const auto system = pool.stats();
  out << fmt::format(
      "\nsystem: peak {} in regions against a budget of {} ({:.0f}%), peak live {}, "
      "{:.2f} s\n",
      format_bytes(system.peak_reserved_bytes), format_bytes(system.budget),
      100.0 * static_cast<double>(system.peak_reserved_bytes) / static_cast<double>(system.budget),
      format_bytes(system.peak_live_bytes), seconds);
  for (std::size_t j = 0; j < options.jobs; ++j) {
    if (!failures[j].empty()) out << "\njob" << j << ": " << failures[j] << "\n";
  }
  for (auto id : ids) pool.remove_job(id);
  return failed;
}

}  // namespace tandem::cli
