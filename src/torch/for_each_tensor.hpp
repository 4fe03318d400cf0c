#pragma once
// Visits every tensor an operator's argument or result holds: a tensor, a tensor list, or a
// generic list of them (an optional tensor comes as a tensor or None).

#include <ATen/core/ivalue.h>

namespace tandem::torch_support::detail {

template <typename Visit>
void for_each_tensor(const c10::IValue& value, Visit&& visit) {
  if (value.isTensor()) {
    visit(value.toTensor());
  } else if (value.isTensorList()) {
    for (const at::Tensor& tensor : value.toTensorList()) visit(tensor);
  } else if (value.isList()) {
    for (const c10::IValue& element : value.toListRef()) for_each_tensor(element, visit);
  }
}

}  // namespace tandem::torch_support::detail
