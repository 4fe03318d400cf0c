// The `tandem` command line: a thin layer that fills option structs and calls the library.

#include <CLI/CLI.hpp>
#include <iostream>

#include "pool_demo.hpp"
#include "tandem/common/error.hpp"
#include "tandem/common/units.hpp"

namespace {

/// Adds a size option ("64MiB", "2G", "4096") that writes bytes into `target`.
CLI::Option* add_size(CLI::App& app, const std::string& name, std::size_t& target,
                      const std::string& help) {
  return app
      .add_option_function<std::string>(
          name, [&target](const std::string& text) { target = tandem::parse_bytes(text); }, help)
      ->default_str(tandem::format_bytes(target));
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tandem: several training jobs side by side on one device, under one memory budget"};
  app.set_version_flag("--version", "tandem 0.1.0");
  app.require_subcommand(1);

  tandem::cli::pool_demo_options demo;
  auto* demo_cmd = app.add_subcommand(
      "pool-demo", "Synthetic training jobs sharing one pool on the CPU backend");
  demo_cmd->add_option("--jobs", demo.jobs, "Jobs side by side")->check(CLI::Range(1, 64));
  demo_cmd->add_option("--iterations", demo.iterations, "Iterations per job")
      ->check(CLI::Range(1, 100000));
  demo_cmd->add_option("--layers", demo.layers, "Layers per synthetic model")
      ->check(CLI::Range(1, 1000));
  add_size(*demo_cmd, "--layer-bytes", demo.layer_bytes, "Feature map of the first layer");
  add_size(*demo_cmd, "--capacity", demo.capacity, "Device memory the pool reserves");
  add_size(*demo_cmd, "--budget", demo.budget, "Most memory the jobs may hold together");
  add_size(*demo_cmd, "--region-size", demo.region_size, "Unit of memory moving between jobs");

  try {
    app.parse(argc, argv);
    if (demo_cmd->parsed()) return tandem::cli::run_pool_demo(demo, std::cout) == 0 ? 0 : 3;
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const tandem::error& e) {
    std::cerr << "tandem: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
