#pragma once
// State a pool shares with its job arenas. Internal to tandem::memory.

#include <atomic>
#include <chrono>
#include <cstddef>

#include "tandem/memory/borrow_gate.hpp"
#include "tandem/memory/pool_options.hpp"
#include "tandem/memory/region_pool.hpp"
#include "tandem/memory/trace.hpp"

namespace tandem::memory::detail {

struct pool_context {
  pool_context(std::byte* base_address, const pool_options& pool_settings, std::size_t regions)
      : base(base_address),
        options(pool_settings),
        region_supply(regions, pool_settings.region_size, pool_settings.effective_budget()),
        start(std::chrono::steady_clock::now()) {}

  std::byte* const base;
  const pool_options options;
  region_pool region_supply;
  const std::chrono::steady_clock::time_point start;
  std::atomic<trace_sink*> sink{nullptr};
  std::atomic<borrow_gate*> gate{nullptr};  // judges region borrows; nullptr: the budget alone
  std::atomic<std::size_t> live_bytes{0};
  std::atomic<std::size_t> peak_live_bytes{0};

  [[nodiscard]] std::int64_t now_ns() const {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() -
                                                                start)
        .count();
  }

  void add_live(std::size_t bytes) {
    const auto now = live_bytes.fetch_add(bytes, std::memory_order_relaxed) + bytes;
    auto peak = peak_live_bytes.load(std::memory_order_relaxed);
    while (now > peak && !peak_live_bytes.compare_exchange_weak(peak, now)) {
    }
  }
  void remove_live(std::size_t bytes) { live_bytes.fetch_sub(bytes, std::memory_order_relaxed); }
};

}  // namespace tandem::memory::detail
