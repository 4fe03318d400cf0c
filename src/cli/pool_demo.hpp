#pragma once
// `tandem pool-demo`: several synthetic training jobs share one pool on the CPU backend.

#include <cstddef>
#include <iosfwd>

namespace tandem::cli {

struct pool_demo_options {
  std::size_t jobs = 3;
  std::size_t iterations = 6;
  std::size_t layers = 12;
  std::size_t layer_bytes = 24u << 20;  // feature map of the first layer
  std::size_t capacity = 2048u << 20;
  std::size_t budget = 1024u << 20;
  std::size_t region_size = 16u << 20;
  double stagger = 0.5;  // each job starts this many iterations after the previous one
};

/// Runs the demo and prints progress and a table to `out`. Returns the number of failed jobs.
int run_pool_demo(const pool_demo_options& options, std::ostream& out);

}  // namespace tandem::cli
