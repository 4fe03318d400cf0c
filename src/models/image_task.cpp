// The image task: each class has a fixed smooth prototype (coarse random noise upsampled, plus
// a class colour); a sample is its class's prototype at a random contrast plus pixel noise.
// A linear model can match the templates and a convolutional one the colours and local shapes,
// so every image model learns it, yet the noise keeps single pixels uninformative.

#include <algorithm>

#include "networks.hpp"

namespace tandem::models::detail {
namespace {

constexpr std::uint64_t teacher_stream = 1;
constexpr std::uint64_t batch_stream = 2;
constexpr double noise_std = 1.0;

class image_task final : public task {
 public:
  explicit image_task(const model_options& options)
      : classes_(options.classes), channels_(options.channels), side_(options.image_side) {
    auto generator = generator_for(options.seed, teacher_stream);
    const std::int64_t coarse = std::min<std::int64_t>(4, side_);
    const auto blobs = torch::randn({classes_, channels_, coarse, coarse}, generator);
    namespace F = torch::nn::functional;
    prototypes_ = F::interpolate(blobs, F::InterpolateFuncOptions()
                                            .size(std::vector<std::int64_t>{side_, side_})
                                            .mode(torch::kBilinear)
                                            .align_corners(false));
    prototypes_ += 0.5 * torch::randn({classes_, channels_, 1, 1}, generator);
  }

  batch make_batch(std::int64_t batch_size, std::uint64_t seed) const override {
    auto generator = generator_for(seed, batch_stream);
    auto labels = torch::randint(classes_, {batch_size}, generator);
    const auto contrast = 0.75 + 0.5 * torch::rand({batch_size, 1, 1, 1}, generator);
    auto images = prototypes_.index_select(0, labels) * contrast +
                  noise_std * torch::randn({batch_size, channels_, side_, side_}, generator);
    return {std::move(images), std::move(labels)};
  }

  torch::Tensor loss(const torch::Tensor& output, const torch::Tensor& target) const override {
    return torch::nn::functional::cross_entropy(output, target);
  }

 private:
  std::int64_t classes_;
  std::int64_t channels_;
  std::int64_t side_;
  torch::Tensor prototypes_;  // [classes, channels, side, side]
};

}  // namespace

std::unique_ptr<task> make_image_task(const model_options& options) {
  return std::make_unique<image_task>(options);
}

}  // namespace tandem::models::detail
