// The `tandem` command line: a thin layer that fills option structs and calls the library.

#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <limits>
#include <optional>

#include "command_line.hpp"
#include "maxbatch_command.hpp"
#include "policies_command.hpp"
#include "pool_demo.hpp"
#include "report_command.hpp"
#include "sim_command.hpp"
#if TANDEM_HAVE_TORCH
#include "plan_command.hpp"
#include "run_command.hpp"
#endif
#include "tandem/common/error.hpp"
#include "tandem/common/signal_stop.hpp"
#include "tandem/common/units.hpp"
#if TANDEM_HAVE_TORCH
#include "tandem/footprint/planner.hpp"
#include "tandem/runtime/workload_limits.hpp"
#endif

namespace {

/// Adds an option that names a file: an empty name is refused (cli::file_name).
CLI::Option* add_file(CLI::App& app, const std::string& name, std::string& target,
                      const std::string& help) {
  return app.add_option(name, target, help)->check(tandem::cli::file_name());
}

/// The bytes `text` names, or a config_error that names `flag` as well as the value.
std::size_t bytes_of(const std::string& flag, const std::string& text) {
  try {
    return tandem::parse_bytes(text);
  } catch (const tandem::config_error& e) {
    tandem::config_error named(flag + ": " + e.what());
    named.set_location_of(e);
    throw named;
  }
}

/// Adds a size option ("64MiB", "2G", "4096") that writes bytes into `target`.
CLI::Option* add_size(CLI::App& app, const std::string& name, std::size_t& target,
                      const std::string& help) {
  return app
      .add_option_function<std::string>(
          name, [&target, name](const std::string& text) { target = bytes_of(name, text); }, help)
      ->default_str(tandem::format_bytes(target));
}

}  // namespace

int main(int argc, char** argv) {
  namespace cli = tandem::cli;
  CLI::App app{"tandem: several training jobs side by side on one device, under one memory budget"};
  app.set_version_flag("--version", "tandem 0.1.0");
  app.require_subcommand(1);
  bool debug = false;
  app.add_flag("--debug", debug, "Also print where in tandem's source an error was raised");
  // Unknown options and surplus arguments are set aside rather than thrown, so that the message
  // can name them and suggest the closest option; the subcommands inherit both settings, and
  // pass --debug up to the app wherever it stands.
  app.allow_extras();
  app.fallthrough();

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
  add_file(*sim_cmd, "--profiles", sim.profiles_path,
           "Replay profiles recorded by `tandem profile` on this machine")
      ->excludes(gpu_opt);
  sim_cmd
      ->add_option_function<std::string>(
          "--gpu-memory",
          [&sim](const std::string& text) { sim.gpu_memory = bytes_of("--gpu-memory", text); },
          "Give the --gpu this much memory instead of its own (e.g. 16GiB for a V100-16GB; a "
          "large size takes memory out of the question)")
      ->needs(gpu_opt);
  sim_cmd->add_option("--policy", sim.policy,
                      "Policy, replacing the workload's (also: mps-um, MPS with unified memory)");
  sim_cmd->add_option_function<std::string>(
      "--budget", [&sim](const std::string& text) { sim.budget = bytes_of("--budget", text); },
      "Memory budget (e.g. 16GiB), replacing the workload's");
  sim_cmd->add_option_function<std::vector<std::string>>(
      "--compare",
      [&sim](const std::vector<std::string>& values) {
        sim.compare = cli::comma_items(values, "--compare");
      },
      "Run these policies side by side (a,b,c)");
  sim_cmd->add_option_function<std::vector<std::string>>(
      "--sweep-batch",
      [&sim](const std::vector<std::string>& values) {
        sim.sweep_batch.clear();
        const auto batch = cli::whole_number(1, tandem::runtime::max_batch_size);
        for (const auto& item : cli::comma_items(values, "--sweep-batch", batch))
          sim.sweep_batch.push_back(std::stoll(item));
      },
      "Run every job at each of these batch sizes (with --gpu)");
  add_file(*sim_cmd, "--json", sim.json_path, "Write the results as JSON to this file");
  add_file(*sim_cmd, "--timeline", sim.timeline_path,
           "Write the timeline (time, job, event, regions held) as CSV");
  add_file(*sim_cmd, "--report", sim.report_path,
           "Write the results (and the timeline) as a self-contained HTML report");
  sim_cmd->add_option("--seed", sim.seed, "Seed of the iteration-time jitter")
      ->check(cli::whole_number(0, std::numeric_limits<std::int64_t>::max()));
  sim_cmd->add_option("--jitter", sim.jitter, "Spread of iteration times (0: none; 0.05: 5%)")
      ->check(CLI::Range(0.0, 1.0));
  // Planned jobs: each training job replays its iteration under a footprint plan.
  sim_cmd->add_option("--planner", sim.planner,
                      "Plan every training job's iteration with this footprint planner (" +
                          cli::planner_names_text() + "; with --gpu)");
  sim_cmd->add_option(
      "--policy-planner", sim.policy_planner,
      "The policy may run iterations under plans by this footprint planner, "
      "choosing at each start between a delay and a plan (scrooge, nodegroup, srtf, "
      "pack, fair; replaces [policy] planner; none: no plans)");
  sim_cmd->add_option("--plan-budget", sim.plan_budget,
                      "Budget of the plans: N% of each job's vanilla peak or a size (e.g. 75%, "
                      "6GiB); default: each job's share of the device's budget");

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
      ->capture_default_str()
      ->check(cli::whole_number());  // the range: maxbatch_command, which says why
  maxbatch_cmd->add_option("--iterations", maxbatch.iterations, "Iterations per job and run")
      ->capture_default_str()
      ->check(cli::whole_number());
  maxbatch_cmd->add_option("--set", maxbatch.settings, "Policy option KEY=VALUE (repeatable)")
      ->allow_extra_args(false);
  maxbatch_cmd->add_option("--sweep", maxbatch.sweep,
                           "Search again for each value of one policy option: KEY=V1,V2,...");
  maxbatch_cmd->add_option("--low", maxbatch.low, "First batch tried")
      ->capture_default_str()
      ->check(cli::whole_number());
  maxbatch_cmd
      ->add_option("--high", maxbatch.high,
                   "Largest batch tried (default: doubling until a run fails)")
      ->check(cli::whole_number());
  add_file(*maxbatch_cmd, "--json", maxbatch.json_path, "Write the table as JSON to this file");
  // Planned jobs: each probe runs (or simulates) every job's iteration under a footprint plan.
  maxbatch_cmd->add_option(
      "--planner", maxbatch.planner,
      "Plan every job's iteration with this footprint planner (" + cli::planner_names_text() + ")");
  maxbatch_cmd->add_option("--plan-budget", maxbatch.plan_budget,
                           "Budget of the plans: N% of each job's vanilla peak or a size (e.g. "
                           "75%, 6GiB); default: each job's share of the device's budget. "
                           "Without --planner, the default planner (tandem) plans");

  tandem::cli::report_command_options report;
  auto* report_cmd = app.add_subcommand(
      "report", "Draw a results file (tandem run, sim or maxbatch --json) as one HTML page");
  report_cmd
      ->add_option("results", report.results,
                   "Results JSON of tandem run, tandem sim (--compare, --sweep-batch too) or "
                   "tandem maxbatch")
      ->required();
  add_file(*report_cmd, "--timeline", report.timeline,
           "The run's memory timeline (the CSV of --timeline), for its picture");
  add_file(*report_cmd, "--out", report.out, "Where the page goes")->capture_default_str();

  tandem::cli::policies_command_options policies;
  auto* policies_cmd = app.add_subcommand(
      "policies", "List the scheduling policies with what each does and its options");
  policies_cmd->add_option("policy", policies.only, "Only this policy");
#if TANDEM_HAVE_TORCH
  tandem::cli::run_command_options run;
  auto* run_cmd = app.add_subcommand(
      "run", "Train the jobs of a workload file side by side on one pool under a policy");
  run_cmd->add_option("workload", run.workload, "Workload file (TOML; see examples/)")->required();
  run_cmd->add_option("--policy", run.policy, "Policy, replacing the workload's [policy] name");
  run_cmd->add_option_function<std::string>(
      "--budget", [&run](const std::string& text) { run.budget = bytes_of("--budget", text); },
      "Memory budget (e.g. 1GiB), replacing the workload's");
  run_cmd->add_option("--planner", run.planner,
                      "Footprint planner of every training job, replacing the jobs' planner: "
                      "each records an iteration, plans it and runs the rest under the plan");
  run_cmd->add_option(
      "--policy-planner", run.policy_planner,
      "The policy may run iterations under plans by this footprint planner, "
      "choosing at each start between a delay and a plan (scrooge, nodegroup, srtf, "
      "pack, fair; replaces [policy] planner; none: no plans)");
  add_file(*run_cmd, "--json", run.json_path, "Write the results as JSON to this file");
  add_file(*run_cmd, "--timeline", run.timeline_path,
           "Write the memory timeline (time, job, live bytes by kind) as CSV");
  add_file(*run_cmd, "--report", run.report_path,
           "Write the results and the memory timeline as a self-contained HTML report");
  run_cmd
      ->add_option("--progress-interval", run.progress_interval_s, "Seconds between progress lines")
      ->check(cli::seconds_between(0.01, 86400));
  run_cmd->add_flag("--quiet", run.quiet, "No progress lines");

  tandem::cli::models_command_options zoo;
  auto* models_cmd =
      app.add_subcommand("models", "List the model zoo with parameter counts and peak memory");
  models_cmd->add_option("--batch", zoo.batch_size, "Batch size of the measured iteration")
      ->check(CLI::Range(1, 65536));
  models_cmd->add_option("--model", zoo.only, "Only this model");
  // A callback rather than CLI11's "!--no-measure", whose help shows "--no-measure{false}".
  models_cmd->add_flag_callback(
      "--no-measure", [&zoo] { zoo.measure = false; }, "List without training an iteration");

  tandem::cli::profile_command_options profile;
  auto* profile_cmd = app.add_subcommand(
      "profile", "Train each job of a workload alone and write its profile (JSON)");
  profile_cmd->add_option("workload", profile.workload, "Workload file (TOML; see examples/)")
      ->required();
  profile_cmd->add_option("--iterations", profile.iterations, "Iterations per job (at least 2)")
      ->check(CLI::Range(2, 1000000));
  add_file(*profile_cmd, "--out", profile.out_path, "Where the profiles go (JSON)");

  tandem::cli::plan_command_options plan;
  auto* plan_cmd = app.add_subcommand(
      "plan",
      "Plan what each training job swaps and recomputes (footprint planners) and price the plans");
  plan_cmd->add_option("workload", plan.workload, "Workload file (TOML; see examples/)")
      ->required();
  plan_cmd->add_option("--planner", plan.planner,
                       "Planner of every training job, replacing the jobs' planner (below; a job "
                       "that names none: the default planner, tandem)");
  plan_cmd->footer([] {
    std::string text = "Planners:\n";
    for (const auto& name : tandem::footprint::planner_names()) {
      text += "  " + name + std::string(name.size() < 14 ? 14 - name.size() : 1, ' ') +
              std::string(tandem::footprint::make_planner(name)->summary()) + "\n";
    }
    return text;
  }());
  plan_cmd->add_option("--budget", plan.budget,
                       "Budget of every plan: N% of the job's vanilla peak or a size (e.g. 75%, "
                       "1GiB), replacing the jobs' plan_budget");
  add_file(*plan_cmd, "--json", plan.json_path, "Write the measures and the plans as JSON");
  add_file(*plan_cmd, "--profile", plan.profile_path,
           "Take access sequences from this `tandem profile` output instead of "
           "recording them");
#else
  auto* run_cmd = app.add_subcommand("run", "(needs a build with libtorch)")->allow_extras();
  auto* models_cmd = app.add_subcommand("models", "(needs a build with libtorch)")->allow_extras();
  auto* profile_cmd =
      app.add_subcommand("profile", "(needs a build with libtorch)")->allow_extras();
  auto* plan_cmd = app.add_subcommand("plan", "(needs a build with libtorch)")->allow_extras();
#endif

  // A command that is none of these would reach CLI11 as a stray argument ("A subcommand is
  // required"); name it instead.
  std::vector<std::string> commands;
  for (const auto* command : app.get_subcommands({})) commands.push_back(command->get_name());
  const auto named = cli::named_command(argc, argv);
  const bool asks_for_help_or_version = [&] {
    for (int i = 1; i < argc; ++i) {
      const std::string argument = argv[i];
      if (argument == "-h" || argument == "--help" || argument == "--version") return true;
    }
    return false;
  }();
  if (std::find(commands.begin(), commands.end(), named) == commands.end() &&
      !(named.empty() && asks_for_help_or_version)) {
    std::cerr << "tandem: " << cli::unknown_command_message(named, commands)
              << "\nrun `tandem --help` for what each does\n";
    return cli::bad_input_status;
  }

  // Ctrl-C and SIGTERM: commands that measure stop at a boundary and write what they did
  // (exit 130 or 143); a second signal, or the first during a simulation (seconds long, and
  // replayable), exits at once without writing. Every output file is written whole or not at
  // all (atomic_file.hpp), so nothing is left half-written either way.
  std::optional<tandem::signal_stop> stop;
  const auto arm_stop = [&](const char* notice,
                            tandem::signal_stop::mode how = tandem::signal_stop::mode::graceful) {
    stop.emplace(notice, how);
    return stop->token();
  };
  int status = 0;
  try {
    app.parse(argc, argv);
    const CLI::App* parsed = nullptr;
    for (const auto* command : app.get_subcommands()) parsed = command;
#if !TANDEM_HAVE_TORCH
    // Before the check of extras: these stand-ins take any arguments, to say what is missing.
    if (run_cmd->parsed() || models_cmd->parsed() || profile_cmd->parsed() || plan_cmd->parsed()) {
      std::cerr << "tandem: this build has no libtorch, so it cannot train; run "
                   "scripts/install-deps.sh and rebuild (cmake finds libtorch-dev)\n";
      return cli::bad_input_status;
    }
#endif
    if (const auto extras = cli::extras_message(app, parsed); !extras.empty()) {
      std::cerr << "tandem: " << extras << "\nrun `tandem " << named
                << " --help` for its options\n";
      return cli::bad_input_status;
    }
    if (demo_cmd->parsed()) {
      status = cli::run_pool_demo(demo, std::cout) == 0 ? 0 : 3;
    } else if (sim_cmd->parsed()) {
      arm_stop("", tandem::signal_stop::mode::immediate);
      status = cli::sim_workload_command(sim, std::cout);
    } else if (report_cmd->parsed()) {
      status = cli::report_command(report, std::cout);
    } else if (policies_cmd->parsed()) {
      status = cli::list_policies_command(policies, std::cout);
    } else if (maxbatch_cmd->parsed()) {
      const auto token = arm_stop("stopping the search after the run under way");
      status = cli::maxbatch_command(maxbatch, std::cout, std::cerr, token);
#if TANDEM_HAVE_TORCH
    } else if (run_cmd->parsed()) {
      const auto token =
          arm_stop("stopping every job at its next iteration, then writing what was done");
      status = cli::run_workload_command(run, std::cout, std::cerr, token);
    } else if (models_cmd->parsed()) {
      status = cli::list_models_command(zoo, std::cout);
    } else if (profile_cmd->parsed()) {
      const auto token = arm_stop(
          "stopping the job being profiled at its next iteration, then writing what was done");
      status = cli::profile_workload_command(profile, std::cout, std::cerr, token);
    } else if (plan_cmd->parsed()) {
      const auto token = arm_stop(
          "stopping the recording at the job's next iteration, or a planner's search at once; no "
          "plans will be written");
      status = cli::plan_workload_command(plan, std::cout, std::cerr, token);
#endif
    }
  } catch (const CLI::ParseError& e) {
    // --help and --version are "errors" with status 0; CLI11 prints them.
    if (e.get_exit_code() == 0) return app.exit(e);
    std::cerr << "tandem " << named << ": " << cli::parse_error_message(e) << "\nrun `tandem "
              << named << " --help` for its options\n";
    return cli::bad_input_status;
  } catch (const tandem::error& e) {
    std::cerr << "tandem: " << e.what();
    if (debug && !e.location().empty()) std::cerr << " [" << e.location() << "]";
    std::cerr << "\n";
    return cli::bad_input_status;
  }
  // Stopped by a signal: the shell's 128 + signal, whatever the jobs did.
  if (stop && stop->signal() != 0) return stop->exit_status();
  return status;
}
