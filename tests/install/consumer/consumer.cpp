// Joins an installed tandem's runtime and runs three (empty) iterations under scrooge.
#include <iostream>
#include <tandem/api/runtime.hpp>

int main() {
  tandem::api::runtime_options options;
  options.budget = "32MiB";
  options.region_size = "2MiB";
  tandem::api::runtime rt(options);
  {
    auto job = rt.join("consumer");
    for (int i = 0; i < 3; ++i) {
      auto step = job.iteration();
      step.report_loss(1.0 / (i + 1));
    }
  }
  const auto results = rt.results();
  std::cout << "consumer: " << results.jobs.at(0).iterations << " iterations under "
            << results.policy << '\n';
  return results.jobs.at(0).iterations == 3 ? 0 : 1;
}
