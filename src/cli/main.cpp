// The `tandem` command line: a thin layer that fills option structs and calls the library.

#include <CLI/CLI.hpp>
#include <iostream>

#include "maxbatch_command.hpp"
#include "pool_demo.hpp"
#include "sim_command.hpp"
#if TANDEM_HAVE_TORCH
#include "run_command.hpp"
#endif
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

  tandem::cli::sim_command_options sim;
  auto* sim_cmd = app.add_subcommand(
      "sim", "Simulate a workload from generated (--gpu) or recorded (--profiles) job profiles");
  sim_cmd->add_option("workload", sim.workload, "Workload file (TOML; see examples/)")->required();
  auto* gpu_opt = sim_cmd->add_option(
      "--gpu", sim.gpu,
      "Generate each job's profile for this GPU (p100, v100, 2080ti, a100-40gb, a100-80gb, h100)");
  sim_cmd
      ->add_option("--profiles", sim.profiles_path,
                   "Replay profiles recorded by `tandem profile` on this machine")
      ->excludes(gpu_opt);
  sim_cmd->add_option("--policy", sim.policy,
                      "Policy, replacing the workload's (also: mps-um, MPS with unified memory)");
  sim_cmd->add_option_function<std::string>(
      "--budget", [&sim](const std::string& text) { sim.budget = tandem::parse_bytes(text); },
      "Memory budget (e.g. 16GiB), replacing the workload's");
  sim_cmd->add_option("--compare", sim.compare, "Run these policies side by side (a,b,c)")
      ->delimiter(',');
  sim_cmd
      ->add_option("--sweep-batch", sim.sweep_batch,
                   "Run every job at each of these batch sizes (with --gpu)")
      ->delimiter(',')
      ->check(CLI::PositiveNumber);
  sim_cmd->add_option("--json", sim.json_path, "Write the results as JSON to this file");
  sim_cmd->add_option("--timeline", sim.timeline_path,
                      "Write the timeline (time, job, event, regions held) as CSV");
  sim_cmd->add_option("--seed", sim.seed, "Seed of the iteration-time jitter");
  sim_cmd->add_option("--jitter", sim.jitter, "Spread of iteration times (0: none; 0.05: 5%)")
      ->check(CLI::Range(0.0, 1.0));

  tandem::cli::maxbatch_command_options maxbatch;
  auto* maxbatch_cmd = app.add_subcommand(
      "maxbatch",
      "Largest batch at which N copies of a workload's first job fit side by side, against one "
      "alone");
  maxbatch_cmd->add_option("workload", maxbatch.workload, "Workload file (TOML; see examples/)")
      ->required();
  maxbatch_cmd->add_option("--policy", maxbatch.policy,
                           "Policy of the co-located runs, replacing the workload's");
  maxbatch_cmd->add_flag("--sim", maxbatch.simulate,
                         "Simulate the runs (with --gpu) instead of training");
  maxbatch_cmd->add_option(
      "--gpu", maxbatch.gpu,
      "GPU of the simulated runs (p100, v100, 2080ti, a100-40gb, a100-80gb, h100)");
  maxbatch_cmd->add_option("--jobs", maxbatch.jobs, "Identical jobs side by side")
      ->capture_default_str();
  maxbatch_cmd->add_option("--iterations", maxbatch.iterations, "Iterations per job and run")
      ->capture_default_str();
  maxbatch_cmd->add_option("--set", maxbatch.settings, "Policy option KEY=VALUE (repeatable)")
      ->allow_extra_args(false);
  maxbatch_cmd->add_option("--sweep", maxbatch.sweep,
                           "Search again for each value of one policy option: KEY=V1,V2,...");
  maxbatch_cmd->add_option("--low", maxbatch.low, "First batch tried")->capture_default_str();
  maxbatch_cmd->add_option("--high", maxbatch.high,
                           "Largest batch tried (default: doubling until a run fails)");
  maxbatch_cmd->add_option("--json", maxbatch.json_path, "Write the table as JSON to this file");
#if TANDEM_HAVE_TORCH
  tandem::cli::run_command_options run;
  auto* run_cmd = app.add_subcommand(
      "run", "Train the jobs of a workload file side by side on one pool under a policy");
  run_cmd->add_option("workload", run.workload, "Workload file (TOML; see examples/)")->required();
  run_cmd->add_option("--policy", run.policy, "Policy, replacing the workload's [policy] name");
  run_cmd->add_option_function<std::string>(
      "--budget", [&run](const std::string& text) { run.budget = tandem::parse_bytes(text); },
      "Memory budget (e.g. 1GiB), replacing the workload's");
  run_cmd->add_option("--json", run.json_path, "Write the results as JSON to this file");
  run_cmd->add_option("--timeline", run.timeline_path,
                      "Write the memory timeline (time, job, live bytes by kind) as CSV");
  run_cmd
      ->add_option("--progress-interval", run.progress_interval_s, "Seconds between progress lines")
      ->check(CLI::PositiveNumber);
  run_cmd->add_flag("--quiet", run.quiet, "No progress lines");

  tandem::cli::models_command_options zoo;
  auto* models_cmd =
      app.add_subcommand("models", "List the model zoo with parameter counts and peak memory");
  models_cmd->add_option("--batch", zoo.batch_size, "Batch size of the measured iteration")
      ->check(CLI::Range(1, 65536));
  models_cmd->add_option("--model", zoo.only, "Only this model");
  models_cmd->add_flag("!--no-measure", zoo.measure, "List without training an iteration");

  tandem::cli::profile_command_options profile;
  auto* profile_cmd = app.add_subcommand(
      "profile", "Train each job of a workload alone and write its profile (JSON)");
  profile_cmd->add_option("workload", profile.workload, "Workload file (TOML; see examples/)")
      ->required();
  profile_cmd->add_option("--iterations", profile.iterations, "Iterations per job (at least 2)")
      ->check(CLI::Range(2, 1000000));
  profile_cmd->add_option("--out", profile.out_path, "Where the profiles go (JSON)");
#else
  auto* run_cmd = app.add_subcommand("run", "(needs a build with libtorch)")->allow_extras();
  auto* models_cmd = app.add_subcommand("models", "(needs a build with libtorch)")->allow_extras();
  auto* profile_cmd =
      app.add_subcommand("profile", "(needs a build with libtorch)")->allow_extras();
#endif

  try {
    app.parse(argc, argv);
    if (demo_cmd->parsed()) return tandem::cli::run_pool_demo(demo, std::cout) == 0 ? 0 : 3;
    if (sim_cmd->parsed()) return tandem::cli::sim_workload_command(sim, std::cout);
    if (maxbatch_cmd->parsed()) {
      return tandem::cli::maxbatch_command(maxbatch, std::cout, std::cerr);
    }
#if TANDEM_HAVE_TORCH
    if (run_cmd->parsed()) return tandem::cli::run_workload_command(run, std::cout, std::cerr);
    if (models_cmd->parsed()) return tandem::cli::list_models_command(zoo, std::cout);
    if (profile_cmd->parsed()) {
      return tandem::cli::profile_workload_command(profile, std::cout, std::cerr);
    }
#else
    if (run_cmd->parsed() || models_cmd->parsed() || profile_cmd->parsed()) {
      std::cerr << "tandem: this build has no libtorch, so it cannot train; run "
                   "scripts/install-deps.sh and rebuild (cmake finds libtorch-dev)\n";
      return 2;
    }
#endif
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const tandem::error& e) {
    std::cerr << "tandem: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
