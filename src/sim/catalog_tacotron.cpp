// Tacotron 2 (Shen et al. 2018) with the layer sizes of NVIDIA's implementation
// (DeepLearningExamples, PyTorch/SpeechSynthesis/Tacotron2): character embedding 512, three
// 5-wide convolutions of 512 with batch norm, a bidirectional LSTM of 2 x 256; a decoder that for
// every mel frame runs the prenet (2 x 256, dropout 0.5), the attention LSTM cell (1024),
// location-sensitive attention (128, 32 location filters of width 31), the decoder LSTM cell
// (1024) and the frame and stop-token projections; a postnet of five 5-wide convolutions (512,
// tanh). `sequence_length` characters in, `output_length` 80-band mel frames out (one per step).

#include <algorithm>
#include <vector>

#include "catalog_layers.hpp"
#include "catalog_models.hpp"
#include "catalog_recurrent.hpp"

namespace tandem::sim::catalog {
namespace {

constexpr std::int64_t embedding_width = 512;
constexpr std::int64_t encoder_lstm = 256;
constexpr std::int64_t prenet = 256;
constexpr std::int64_t attention_rnn = 1024;
constexpr std::int64_t decoder_rnn = 1024;
constexpr std::int64_t attention_width = 128;
constexpr std::int64_t location_filters = 32;
constexpr std::int64_t location_kernel = 31;
constexpr std::int64_t mel_bands = 80;
constexpr std::int64_t postnet_width = 512;

double real(std::int64_t value) {
  return static_cast<double>(value);
}

conv_spec conv1d(std::int64_t out_channels) {
  conv_spec spec = rect_conv(out_channels, 1, 5);
  spec.bias = true;
  return spec;
}

/// The decoder's parameters, in NVIDIA's order.
std::vector<std::int64_t> decoder_parameters() {
  const std::int64_t att_in = prenet + embedding_width;
  const std::int64_t dec_in = attention_rnn + embedding_width;
  return {mel_bands * prenet,
          prenet * prenet,
          4 * attention_rnn * att_in,
          4 * attention_rnn * attention_rnn,
          4 * attention_rnn,
          4 * attention_rnn,
          attention_rnn * attention_width,  // query layer
          attention_width,                  // v
          location_filters * 2 * location_kernel,
          location_filters * attention_width,
          4 * decoder_rnn * dec_in,
          4 * decoder_rnn * decoder_rnn,
          4 * decoder_rnn,
          4 * decoder_rnn,
          dec_in * mel_bands,
          mel_bands,
          dec_in,
          1};
}

/// One decoder step (one mel frame) over an input of `characters`.
layer decoder_frame(std::int64_t batch, std::int64_t characters) {
  const double b = real(batch);
  const double t = real(characters);
  const double att_in = real(prenet + embedding_width);
  const double dec_in = real(attention_rnn + embedding_width);
  const double gemm_flops =
      2.0 * b *
      (real(mel_bands * prenet + prenet * prenet) + (att_in + attention_rnn) * 4 * attention_rnn +
       real(attention_rnn * attention_width) + (dec_in + decoder_rnn) * 4 * decoder_rnn +
       dec_in * real(mel_bands + 1));
  const double attention_flops =
      2.0 * b * t *
          real(location_filters * 2 * location_kernel + location_filters * attention_width +
               attention_width + embedding_width) +
      11.0 * b * t * real(attention_width);
  double weight_elements = 0;
  for (const auto p : decoder_parameters()) weight_elements += real(p);
  const double memory_reads = b * t * real(embedding_width + attention_width) * fp32_bytes;
  const double attention_bytes =
      4.0 * b * t * real(attention_width + location_filters) * fp32_bytes;

  layer l;
  l.kind = op_kind::recurrent;
  l.forward.flops = gemm_flops + attention_flops;
  l.forward.bytes = weight_elements * fp32_bytes + memory_reads + attention_bytes;
  l.forward.blocks = gemm_tiles(batch, 4 * decoder_rnn);
  // Operations per frame: Waterwave (§2.2) counts close to 80,000 kernels in a Tacotron 2
  // iteration, 100 per frame at our 800 frames; NVIDIA's eager PyTorch decoder issues about as
  // many (prenet 8, two LSTM cells 6, attention 12, their dropouts 4, concatenations and
  // projections 6: about 40 forward, 60 backward with autograd's accumulations).
  l.forward.kernels = 40;
  l.backward.flops = 2 * l.forward.flops;
  l.backward.bytes = 2 * l.forward.bytes;
  l.backward.blocks = l.forward.blocks;
  l.backward.kernels = 60;
  l.output_bytes = batch * (mel_bands + 1) * fp32_bytes;  // the frame and its stop token
  // Prenet activations and masks, both cells' gates and states, the attention's location
  // features, energies and weights, the context and the projection's input.
  l.saved_bytes = batch *
                      (2 * prenet + 6 * attention_rnn + 6 * decoder_rnn + embedding_width +
                       attention_rnn + embedding_width) *
                      fp32_bytes +
                  batch * characters * (location_filters + attention_width + 2) * fp32_bytes +
                  batch * 2 * prenet * mask_bytes;
  l.backward_scratch_bytes = batch * characters * attention_width * fp32_bytes;
  l.input_gradient_bytes = batch * (attention_rnn + decoder_rnn + embedding_width) * fp32_bytes;
  l.random = true;  // the prenet's dropout
  return l;
}

void decoder(network& net, std::int64_t characters, std::int64_t frames) {
  linear(net, "attention.memory", net.batch * characters, embedding_width, attention_width,
         without_bias());
  const layer frame = decoder_frame(net.batch, characters);
  const std::int64_t per_op = steps_per_op_for(frames, 1);
  const std::size_t first_frame = net.layers.size();
  for (std::int64_t first = 0; first < frames; first += per_op) {
    const std::int64_t count = std::min(per_op, frames - first);
    layer l = frame;
    l.name = "decoder.frame" + std::to_string(first);
    if (first == 0) {
      l.parameters = decoder_parameters();
    } else {
      l.reads_parameters_of = first_frame;
    }
    for (work* w : {&l.forward, &l.backward}) {
      w->flops *= real(count);
      w->bytes *= real(count);
      w->kernels *= static_cast<int>(count);
    }
    l.output_bytes *= count;
    l.saved_bytes *= count;
    l.input_gradient_bytes *= count;
    net.add(std::move(l));
  }
  concat(net, "decoder.frames", net.batch * frames * (mel_bands + 1));
}

void postnet(network& net, std::int64_t frames) {
  image x{mel_bands, 1, frames};
  for (int i = 0; i < 5; ++i) {
    const std::int64_t out = i < 4 ? postnet_width : mel_bands;
    x = conv_bn(net, "postnet" + std::to_string(i), x, conv1d(out),
                i < 4 ? activation::tanh : activation::none);
    dropout(net, "postnet" + std::to_string(i) + ".dropout", net.batch * x.elements());
  }
  add(net, "postnet.residual", net.batch * mel_bands * frames);
}

}  // namespace

network build_tacotron(const model_args& args) {
  network net;
  net.batch = args.batch();
  const std::int64_t characters = args.integer("sequence_length");
  const std::int64_t frames = args.integer("output_length");
  input_frames(net, characters, frames * mel_bands);
  embedding(net, "embedding", net.batch * characters, args.integer("vocabulary"), embedding_width);
  image x{embedding_width, 1, characters};
  for (int i = 0; i < 3; ++i) {
    x = conv_bn(net, "encoder.conv" + std::to_string(i), x, conv1d(embedding_width),
                activation::relu);
    dropout(net, "encoder.conv" + std::to_string(i) + ".dropout", net.batch * x.elements());
  }
  recurrent_spec spec;
  spec.steps = characters;
  spec.input = embedding_width;
  spec.hidden = encoder_lstm;
  spec.directions = 2;
  spec.steps_per_op = steps_per_op_for(characters, 1);
  lstm(net, "encoder.lstm", spec);
  decoder(net, characters, frames);
  postnet(net, frames);
  // Mean squared error of the spectrogram before and after the postnet, and the stop tokens'.
  mse_loss(net, "loss", net.batch * frames * (2 * mel_bands + 1));
  return net;
}

}  // namespace tandem::sim::catalog
