// The 20-layer plain CIFAR network of He et al. 2016 (§4.2, Fig. 6 left): ResNet-20 without its
// shortcuts. A 3x3 convolution of 16 filters, then three stages of six 3x3 convolutions of 16,
// 32 and 64 filters (the first of the second and third stages with stride 2), each convolution
// without bias and followed by batch norm and a ReLU, global average pooling and a linear
// classifier. ReLU as the zoo's CIFAR ResNets write it (not in place: relu(bn(conv(x))) keeps
// the convolution's output and the ReLU's). 269,722 parameters at 10 classes, ResNet-20's: its
// zero-padded shortcuts have none.

#include "catalog_layers.hpp"
#include "catalog_models.hpp"

namespace tandem::sim::catalog {

network build_plain20(const model_args& args) {
  network net;
  net.batch = args.batch();
  const std::int64_t side = args.integer("image_side");
  image x = input_images(net, {args.integer("channels"), side, side});
  x = conv_bn(net, "stem", x, first_layer(square_conv(16, 3)), activation::relu);
  constexpr std::int64_t layers_per_stage = 6;
  for (std::int64_t stage = 0; stage < 3; ++stage) {
    for (std::int64_t i = 0; i < layers_per_stage; ++i) {
      const std::int64_t stride = (stage > 0 && i == 0) ? 2 : 1;
      const std::string name = "stage" + std::to_string(stage + 1) + "_" + std::to_string(i);
      x = conv_bn(net, name, x, square_conv(16 << stage, 3, stride), activation::relu);
    }
  }
  image_classifier(net, x, args.integer("classes"));
  return net;
}

}  // namespace tandem::sim::catalog
