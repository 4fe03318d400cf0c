// tandem's Python module (`import tandem`; this is its compiled half, tandem._tandem): the
// library API (tandem/api/runtime.hpp) for PyTorch users. Built against the libtorch that
// Debian's python3-torch uses, so that the pool becomes the CPU allocator of the torch the user
// imports. Every call that may wait (for the policy, for memory, for a job to leave) lets go of
// the GIL, so the other trials' Python threads run meanwhile; libtorch's ops let go of it too.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>

#include "tandem/api/runtime.hpp"
#include "tandem/common/atomic_file.hpp"

namespace py = pybind11;

namespace {

using tandem::api::iteration_scope;
using tandem::api::job;
using tandem::api::persistent_scope;
using tandem::api::runtime;

std::string results_json(const runtime& rt) {
  std::ostringstream out;
  tandem::runtime::write_json(rt.results(), out);
  return out.str();
}

std::string results_table(const runtime& rt) {
  std::ostringstream out;
  tandem::runtime::print_table(rt.results(), out);
  return out.str();
}

/// A job and the scopes Python holds open on it: context managers end them in order.
struct python_job {
  std::unique_ptr<job> handle;
  std::unique_ptr<iteration_scope> iteration;
  std::unique_ptr<tandem::api::restartable_part> restartable;  ///< within `iteration`
  std::unique_ptr<persistent_scope> persistent;
};

}  // namespace

PYBIND11_MODULE(_tandem, m) {
  m.doc() = "tandem's runtime for PyTorch training loops (compiled half; use the tandem package)";

  // Python's exceptions for tandem's, all under Error (`except tandem.Error` catches any): bad
  // options are also a ValueError, misuse a RuntimeError, a stop a distinct class that loops
  // catch to leave.
  static py::exception<tandem::error> other_error(m, "Error", PyExc_RuntimeError);
  static py::exception<tandem::config_error> config_error(
      m, "ConfigError", py::make_tuple(other_error, py::handle(PyExc_ValueError)));
  static py::exception<tandem::usage_error> usage_error(m, "UsageError", other_error);
  static py::exception<tandem::runtime::run_stopped> stopped(m, "Stopped", other_error);
  py::register_exception_translator([](std::exception_ptr failure) {
    try {
      if (failure) std::rethrow_exception(failure);
    } catch (const tandem::config_error& e) {
      PyErr_SetString(config_error.ptr(), e.what());
    } catch (const tandem::usage_error& e) {
      PyErr_SetString(usage_error.ptr(), e.what());
    } catch (const tandem::runtime::run_stopped& e) {
      PyErr_SetString(stopped.ptr(), e.what());
    } catch (const tandem::error& e) {
      PyErr_SetString(other_error.ptr(), e.what());
    }
  });

  py::class_<runtime>(m, "Runtime")
      .def(py::init([](const std::string& budget, const std::string& policy,
                       const std::optional<std::string>& capacity,
                       const std::optional<std::string>& region_size,
                       const std::map<std::string, double>& policy_options,
                       std::size_t expected_jobs, const std::string& copy_bandwidth,
                       const std::string& device, std::size_t inflight_limit) {
             tandem::api::runtime_options options;
             options.budget = budget;
             options.policy = policy;
             options.capacity = capacity.value_or("");
             options.region_size = region_size.value_or("");
             options.policy_options = policy_options;
             options.expected_jobs = expected_jobs;
             options.copy_bandwidth = copy_bandwidth;
             options.device = device;
             options.inflight_limit = inflight_limit;
             return std::make_unique<runtime>(options);
           }),
           py::arg("budget"), py::arg("policy") = "scrooge", py::arg("capacity") = py::none(),
           py::arg("region_size") = py::none(),
           py::arg("policy_options") = std::map<std::string, double>{},
           py::arg("expected_jobs") = 0, py::arg("copy_bandwidth") = "auto",
           py::arg("device") = "cpu", py::arg("inflight_limit") = 0)
      .def(
          "join",
          [](runtime& rt, const std::string& name, const std::string& model,
             std::int64_t batch_size, std::optional<std::int64_t> iterations, std::int64_t priority,
             bool swap_passively, const std::string& planner, const std::string& plan_budget) {
            tandem::api::job_options options;
            options.model = model;
            options.batch_size = batch_size;
            options.iterations = iterations;
            options.priority = priority;
            options.swap_passively = swap_passively;
            options.planner = planner;
            options.plan_budget = plan_budget;
            auto joined = std::make_unique<python_job>();
            py::gil_scoped_release released;
            joined->handle = std::make_unique<job>(rt.join(name, options));
            return joined;
          },
          py::arg("name"), py::arg("model") = "custom", py::arg("batch_size") = 0,
          py::arg("iterations") = py::none(), py::arg("priority") = 0,
          py::arg("swap_passively") = false, py::arg("planner") = "", py::arg("plan_budget") = "")
      .def(
          "change_budget",
          [](runtime& rt, const std::string& size) {
            py::gil_scoped_release released;
            rt.change_budget(size);
          },
          py::arg("size"))
      .def("close",
           [](runtime& rt) {
             py::gil_scoped_release released;
             rt.close();
           })
      .def("stop",
           [](runtime& rt) {
             py::gil_scoped_release released;
             rt.stop();
           })
      .def("results_json",
           [](const runtime& rt) {
             py::gil_scoped_release released;
             return results_json(rt);
           })
      .def("table",
           [](const runtime& rt) {
             py::gil_scoped_release released;
             return results_table(rt);
           })
      .def(
          "write_json",
          [](const runtime& rt, const std::string& path) {
            py::gil_scoped_release released;
            tandem::atomic_file file(path, "JSON results");
            file.stream() << results_json(rt);
            file.commit();
          },
          py::arg("path"));

  py::class_<python_job>(m, "Job")
      .def_property_readonly("name", [](const python_job& j) { return j.handle->name(); })
      .def_property_readonly("device", [](const python_job& j) { return j.handle->device().str(); })
      .def_property_readonly("iterations",
                             [](const python_job& j) { return j.handle->iterations(); })
      .def("begin_iteration",
           [](python_job& j) {
             // job::iteration() refuses a second iteration under way, with the reason.
             py::gil_scoped_release released;
             j.iteration = std::make_unique<iteration_scope>(j.handle->iteration());
           })
      .def(
          "report_loss",
          [](python_job& j, double loss) {
            TANDEM_EXPECTS(j.iteration != nullptr, tandem::usage_error,
                           "report_loss outside an iteration: call it inside `with "
                           "job.iteration():`");
            j.iteration->report_loss(loss);
          },
          py::arg("loss"))
      .def("begin_restartable",
           [](python_job& j) {
             TANDEM_EXPECTS(j.iteration != nullptr, tandem::usage_error,
                            "restartable() outside an iteration: use it inside `with "
                            "job.iteration() as step:` (as `with step.restartable():`)");
             TANDEM_EXPECTS(j.restartable == nullptr, tandem::usage_error,
                            "job '" + j.handle->name() + "': restartable() is already open");
             // The model's buffers are saved and written back by the Python half.
             j.restartable =
                 std::make_unique<tandem::api::restartable_part>(j.iteration->restartable());
           })
      .def("end_restartable", [](python_job& j) { j.restartable.reset(); })
      .def("end_iteration",
           [](python_job& j) {
             j.restartable.reset();
             if (j.iteration == nullptr) return;
             auto scope = std::move(j.iteration);
             py::gil_scoped_release released;
             scope->end();
           })
      .def(
          "fail_iteration",
          [](python_job& j, const std::string& reason) {
            // True when the policy had cut the iteration short in its restartable part: the
            // job goes on (Job.run_iteration runs the iteration again); else it fails.
            j.restartable.reset();
            if (j.iteration == nullptr) return false;
            auto scope = std::move(j.iteration);
            py::gil_scoped_release released;
            return scope->end_after_exception(reason);
          },
          py::arg("reason"))
      .def("begin_persistent",
           [](python_job& j) {
             TANDEM_EXPECTS(j.persistent == nullptr, tandem::usage_error,
                            "job '" + j.handle->name() + "': persistent() is already open");
             j.persistent = std::make_unique<persistent_scope>(j.handle->persistent());
           })
      .def("end_persistent", [](python_job& j) { j.persistent.reset(); })
      .def(
          "fail",
          [](python_job& j, const std::string& reason) {
            j.restartable.reset();
            auto scope = std::move(j.iteration);
            py::gil_scoped_release released;
            if (scope != nullptr) scope->fail(reason);
            j.handle->fail(reason);
          },
          py::arg("reason"))
      .def("leave", [](python_job& j) {
        // An iteration still open here was cut short: the job fails rather than count it.
        j.restartable.reset();
        auto scope = std::move(j.iteration);
        j.persistent.reset();
        py::gil_scoped_release released;
        if (scope != nullptr) scope->fail("the job left during an iteration");
        j.handle->leave();
      });
}
