#include "catalog_graph.hpp"

#include <cmath>

#include "catalog_models.hpp"
#include "tandem/common/error.hpp"

namespace tandem::sim::catalog {

std::int64_t parameter_count(const network& net) {
  std::int64_t total = 0;
  for (const auto& l : net.layers) {
    for (const auto elements : l.parameters) total += elements;
  }
  return total;
}

double bytes_upper_bound(const network& net) {
  double total = 0;
  for (const auto& l : net.layers) {
    for (const auto elements : l.parameters) total += 4.0 * 4.0 * static_cast<double>(elements);
    for (const auto bytes : l.buffer_bytes) total += static_cast<double>(bytes);
    total += static_cast<double>(l.output_bytes + l.saved_bytes + l.forward_scratch_bytes +
                                 l.backward_scratch_bytes + l.input_gradient_bytes);
  }
  return total;
}

double model_args::real(const std::string& name) const {
  const auto found = values_.find(name);
  TANDEM_ASSERT(found != values_.end(), "model option '" + name + "' is not in the registry");
  return found->second;
}

std::int64_t model_args::integer(const std::string& name) const {
  return std::llround(real(name));
}

}  // namespace tandem::sim::catalog
