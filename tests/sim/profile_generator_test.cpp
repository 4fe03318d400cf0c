// The profile generator: GPU specs, parameter counts against the zoo's (measured) and the
// papers' (published), well-formed profiles for every model, scaling with batch and optimizer,
// plausibility against published throughput and memory, and the error messages.

#include "tandem/sim/profile_generator.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "tandem/common/error.hpp"
#include "tandem/common/units.hpp"
#include "tandem/sim/gpu_spec.hpp"
#include "tandem/sim/region_replay.hpp"

namespace tandem::sim {
namespace {

using memory::alloc_kind;

model_request request(const std::string& model, std::int64_t batch,
                      std::map<std::string, double> options = {}) {
  model_request r;
  r.model = model;
  r.batch_size = batch;
  r.options = std::move(options);
  return r;
}

const std::map<std::string, double> imagenet = {{"image_side", 224}, {"classes", 1000}};

const gpu_spec& v100() {
  return find_gpu("v100");
}

double throughput(const model_request& r, const gpu_spec& gpu) {
  return static_cast<double>(r.batch_size) / generate_profile(r, gpu).solo_iteration_s();
}

/// Time-weighted mean fill of the iteration.
double mean_fill(const job_profile& p) {
  double weighted = 0;
  for (const auto& op : p.operations) weighted += op.fill * op.solo_s;
  return weighted / p.solo_iteration_s();
}

std::size_t activation_peak(const job_profile& p) {
  return p.peak_live_bytes - p.persistent_bytes();
}

/// The message of the config_error `action` throws ("" when it throws none).
template <typename Action>
std::string config_error_message(Action action) {
  try {
    action();
  } catch (const config_error& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// ---- GPU specs -------------------------------------------------------------------------------

TEST(GpuSpecs, ShortNamesAndSpellingsFindTheSpec) {
  EXPECT_EQ(find_gpu("v100").name, "V100-32GB");
  EXPECT_EQ(find_gpu("V100-32GB").name, "V100-32GB");
  EXPECT_EQ(find_gpu("a100-80gb").name, "A100-80GB");
  EXPECT_EQ(find_gpu("A100_80GB").name, "A100-80GB");
  EXPECT_EQ(find_gpu("a100").name, "A100-40GB");
  EXPECT_EQ(find_gpu("2080ti").name, "RTX 2080 Ti-11GB");
  EXPECT_EQ(find_gpu("rtx 2080 ti-11gb").name, "RTX 2080 Ti-11GB");
  EXPECT_EQ(find_gpu("P100").name, "P100-16GB");
  EXPECT_EQ(find_gpu("h100").name, "H100-80GB");
}

TEST(GpuSpecs, EverySpecIsCompleteAndSourced) {
  ASSERT_EQ(gpu_specs().size(), 6u);
  for (const auto& g : gpu_specs()) {
    EXPECT_GT(g.memory_bytes, 8 * GiB) << g.name;
    EXPECT_GT(g.fp32_flops, 5e12) << g.name;
    EXPECT_GT(g.memory_bandwidth, 4e11) << g.name;
    EXPECT_GT(g.pcie_bandwidth, 1e10) << g.name;
    EXPECT_GT(g.sm_count, 40) << g.name;
    EXPECT_TRUE(contains(g.source, "NVIDIA")) << g.name;
    EXPECT_FALSE(g.aliases.empty()) << g.name;
  }
  EXPECT_EQ(find_gpu("v100").memory_bytes, 32 * GiB);
  EXPECT_DOUBLE_EQ(find_gpu("v100").fp32_flops, 15.7e12);
}

TEST(GpuSpecs, UnknownNameIsNamedListedAndSuggested) {
  const std::string message = config_error_message([] { static_cast<void>(find_gpu("v1000")); });
  EXPECT_TRUE(contains(message, "'v1000'")) << message;
  EXPECT_TRUE(contains(message, "A100-80GB")) << message;
  EXPECT_TRUE(contains(message, "did you mean 'v100'")) << message;
}

// ---- Parameter counts ----------------------------------------------------------------------

TEST(ParameterCounts, MatchTheZooExactlyAtDefaultOptions) {
  // Measured from the zoo's libtorch models (src/models) at their default options.
  const std::map<std::string, std::int64_t> zoo = {
      {"resnet20", 269'722},    {"resnet56", 853'018},  {"resnet110", 1'727'962},
      {"resnet50", 23'528'522}, {"vgg16", 15'253'578},  {"mobilenetv2", 2'236'682},
      {"lstm", 521'192},        {"bert_mini", 658'024}, {"mlp", 411'146}};
  for (const auto& [model, count] : zoo) {
    EXPECT_EQ(parameter_count(request(model, 1)), count) << model;
  }
  EXPECT_EQ(parameter_count(request("resnet", 1, {{"depth", 56}})), 853'018);
  EXPECT_EQ(parameter_count(request("resnet", 1, {{"depth", 50}})), 23'528'522);
}

TEST(ParameterCounts, PaperModelsMatchPublishedSizes) {
  auto near = [](const model_request& r, double published, double tolerance) {
    const auto count = static_cast<double>(parameter_count(r));
    EXPECT_NEAR(count / published, 1.0, tolerance) << r.model << ": " << count;
  };
  // torchvision: resnet50 25,557,032; vgg16_bn 138,365,992; mobilenet_v2 3,504,872;
  // inception_v3 without the auxiliary head 23,834,568.
  near(request("resnet50", 1, imagenet), 25.56e6, 0.01);
  auto vgg = imagenet;
  vgg["hidden"] = 4096;
  near(request("vgg16", 1, vgg), 138e6, 0.01);
  near(request("mobilenetv2", 1, imagenet), 3.5e6, 0.01);
  near(request("inception_v3", 1), 23.8e6, 0.02);
  // BERT-base 110M (Devlin et al. 2019); NASNet-A Mobile 5.3M (Zoph et al. 2018, Table 2);
  // variational RHN + WT 23M (Zilly et al. 2017, Table 3).
  near(request("bert_base", 1), 110e6, 0.02);
  near(request("nasnet", 1), 5.3e6, 0.03);
  near(request("rhn", 1), 23e6, 0.05);
  // Counted from NVIDIA's layouts (DeepLearningExamples): GNMT v2 with shared embeddings and
  // Tacotron 2; regression bounds, not published figures.
  near(request("gnmt", 1), 160e6, 0.03);
  near(request("tacotron", 1), 28.2e6, 0.03);
}

TEST(ParameterCounts, Plain20AndSqueezeNetAreExact) {
  // Plain-20 has ResNet-20's weights (its option-A shortcuts have none); SqueezeNet v1.1 is
  // torchvision's squeezenet1_1, 1,235,496 at 224 px and 1000 classes.
  EXPECT_EQ(parameter_count(request("plain20", 1)), 269'722);
  EXPECT_EQ(parameter_count(request("squeezenet", 1)), 727'626);
  EXPECT_EQ(parameter_count(request("squeezenet", 1, imagenet)), 1'235'496);
}

// ---- Well-formed profiles ------------------------------------------------------------------

/// Steps balanced by size, never freeing more than is live at that size, in time order within
/// the iteration, at 512-byte sizes, with kinds in the phase that makes them; the peak as
/// defined; operations timed and filled.
void expect_well_formed(const job_profile& p) {
  SCOPED_TRACE(p.model);
  ASSERT_FALSE(p.operations.empty());
  const double iteration = p.solo_iteration_s();
  double backward_start = iteration;
  double t = 0;
  for (const auto& op : p.operations) {
    EXPECT_GT(op.solo_s, 0) << op.name;
    EXPECT_GT(op.fill, 0) << op.name;
    EXPECT_LE(op.fill, 1) << op.name;
    if (op.name.ends_with(".backward")) backward_start = std::min(backward_start, t);
    t += op.solo_s;
  }
  ASSERT_LT(backward_start, iteration);

  std::map<std::int64_t, int> live_by_size;
  std::int64_t live = 0;
  std::int64_t most = 0;
  double previous = 0;
  for (const auto& step : p.steps) {
    EXPECT_GE(step.at_s, previous);
    EXPECT_LE(step.at_s, iteration * (1 + 1e-12));
    previous = step.at_s;
    ASSERT_NE(step.bytes, 0);
    EXPECT_EQ(std::abs(step.bytes) % 512, 0);
    EXPECT_NE(step.kind, alloc_kind::persistent);
    EXPECT_NE(step.kind, alloc_kind::unknown);
    if (step.bytes > 0) {
      ++live_by_size[step.bytes];
      if (step.kind == alloc_kind::feature_map) {
        EXPECT_LE(step.at_s, backward_start);
      }
      if (step.kind == alloc_kind::gradient) {
        EXPECT_GE(step.at_s, backward_start);
      }
    } else {
      ASSERT_GT(live_by_size[-step.bytes], 0) << "frees " << -step.bytes << " at " << step.at_s;
      --live_by_size[-step.bytes];
    }
    live += step.bytes;
    most = std::max(most, live);
  }
  EXPECT_EQ(live, 0);
  for (const auto& [size, count] : live_by_size) EXPECT_EQ(count, 0) << size;
  EXPECT_EQ(p.peak_live_bytes, p.persistent_bytes() + static_cast<std::size_t>(most));
  EXPECT_TRUE(p.held.steps.empty());
  EXPECT_EQ(p.batch_size, 2);
  EXPECT_EQ(p.source, "generated for V100-32GB");
}

TEST(Profiles, EveryModelIsWellFormedAndSmall) {
  for (const auto& model : generated_model_names()) {
    auto r = request(model, 2);
    if (model == "resnet") r.options["depth"] = 20;
    const auto p = generate_profile(r, v100());
    EXPECT_EQ(p.model, model);
    expect_well_formed(p);
    EXPECT_LE(p.operations.size(), 4000u) << model;
  }
}

TEST(Profiles, SqueezeNetRunsFromItsLeastSide) {
  // 17 px: the stride-2 convolution leaves 8, the ceil-mode pools 4, 2 and 1.
  expect_well_formed(generate_profile(request("squeezenet", 2, {{"image_side", 17}}), v100()));
  expect_well_formed(generate_profile(request("squeezenet", 2, imagenet), v100()));
}

TEST(Profiles, PersistentTensorsAreParametersGradientsStateAndBuffers) {
  const auto r = request("resnet20", 4);
  const auto p = generate_profile(r, v100());
  const auto params = static_cast<std::size_t>(parameter_count(r));
  // 19 batch norms keep running mean and variance (fp32) and a step counter (int64).
  const std::size_t buffers = 2 * 4 * (16 * 7 + 32 * 6 + 64 * 6) + 19 * 8;
  EXPECT_EQ(p.persistent_bytes(), 3 * 4 * params + buffers);
}

TEST(Profiles, LongSequencesStayWithinAFewThousandOperations) {
  const auto p =
      generate_profile(request("lstm", 4, {{"sequence_length", 4096}, {"layers", 8}}), v100());
  EXPECT_LE(p.operations.size(), 3000u);
  expect_well_formed(generate_profile(request("lstm", 2, {{"sequence_length", 4096}}), v100()));
}

TEST(Profiles, ReplayThroughThePool) {
  for (const std::string model : {"mlp", "lstm", "resnet20"}) {
    auto p = generate_profile(request(model, 8), v100());
    const auto peak = p.peak_live_bytes;
    replay_regions(p, 2 * MiB);
    EXPECT_EQ(p.peak_live_bytes, peak) << model;
    EXPECT_GE(p.held.peak(), peak) << model;
  }
}

// ---- Scaling ---------------------------------------------------------------------------------

TEST(Scaling, TimeAndActivationsGrowWithBatchPersistentDoesNot) {
  for (const auto& r :
       {request("resnet50", 8, imagenet), request("bert_base", 8), request("gnmt", 8)}) {
    auto larger = r;
    larger.batch_size = 32;
    const auto small = generate_profile(r, v100());
    const auto large = generate_profile(larger, v100());
    EXPECT_GT(large.solo_iteration_s(), 1.5 * small.solo_iteration_s()) << r.model;
    EXPECT_GT(activation_peak(large), 3 * activation_peak(small)) << r.model;
    EXPECT_EQ(large.persistent_bytes(), small.persistent_bytes()) << r.model;
  }
}

TEST(Scaling, TinyBatchesOfSmallImagesAreLatencyBound) {
  // CIFAR-sized ResNet-50: a batch of 8 leaves most of the GPU idle, so four times the batch
  // costs far less than four times the time. Both are bound by the host's time issuing the
  // kernels (docs/sim-models.md, "Host time"), so they take about as long.
  const auto small = generate_profile(request("resnet50", 8), v100());
  const auto large = generate_profile(request("resnet50", 32), v100());
  EXPECT_GT(large.solo_iteration_s(), 0.97 * small.solo_iteration_s());
  EXPECT_LT(large.solo_iteration_s(), 2 * small.solo_iteration_s());
  EXPECT_LT(mean_fill(small), 0.5);
}

TEST(Scaling, RecurrentMemoryGrowsWithSequenceLength) {
  const auto short_ = generate_profile(request("rhn", 16, {{"sequence_length", 20}}), v100());
  const auto long_ = generate_profile(request("rhn", 16, {{"sequence_length", 80}}), v100());
  EXPECT_GT(activation_peak(long_), 3 * activation_peak(short_));
  EXPECT_GT(long_.solo_iteration_s(), 3 * short_.solo_iteration_s());
}

TEST(Scaling, AdamKeepsOneMoreStatePerParameter) {
  for (const std::string model : {"resnet56", "bert_mini", "gnmt"}) {
    auto sgd = request(model, 4);
    auto adam = sgd;
    adam.optimizer = "adam";
    const auto params = static_cast<std::size_t>(parameter_count(sgd));
    EXPECT_EQ(generate_profile(adam, v100()).persistent_bytes(),
              generate_profile(sgd, v100()).persistent_bytes() + 4 * params)
        << model;
  }
}

TEST(Scaling, RecurrentNetworksAtSmallBatchesLeaveTheGpuUnderused) {
  const double cnn = mean_fill(generate_profile(request("resnet50", 32, imagenet), v100()));
  const double rhn = mean_fill(generate_profile(request("rhn", 20), v100()));
  const double lstm = mean_fill(generate_profile(request("gnmt", 16), v100()));
  EXPECT_GT(cnn, 0.9);
  EXPECT_LT(rhn, 0.5 * cnn);
  EXPECT_LT(lstm, 0.75 * cnn);
}

TEST(Scaling, FasterGpusRunComputeBoundModelsFaster) {
  const auto r = request("resnet50", 32, imagenet);
  const double v = throughput(r, v100());
  EXPECT_GT(throughput(r, find_gpu("a100-80gb")), 1.2 * v);
  EXPECT_GT(throughput(r, find_gpu("h100")), throughput(r, find_gpu("a100-80gb")));
  EXPECT_LT(throughput(r, find_gpu("p100")), v);
}

// ---- Plausibility (docs/sim-models.md) -------------------------------------------------------

TEST(Plausibility, ResNet50OnV100MatchesPublishedThroughputAndMemory) {
  // NVIDIA DeepLearningExamples, ResNet-50 v1.5 PyTorch FP32: 367 img/s (V100 16GB), 356 (32GB);
  // TensorFlow benchmarks, batch 32 on P100: 195 img/s (x1.5 for a V100 is about 290).
  const auto r = request("resnet50", 32, imagenet);
  const double images_per_s = throughput(r, v100());
  EXPECT_GT(images_per_s, 250);
  EXPECT_LT(images_per_s, 450);
  // Allocated (not reserved) peak: about 80 MB per 224x224 image in PyTorch FP32 (40 GB at
  // batch 512, 10-13 GB at batch 96 of 256x256), plus 0.3 GB of weights, gradients, momentum.
  const auto p = generate_profile(r, v100());
  EXPECT_GT(p.peak_live_bytes, 5 * GiB / 2);
  EXPECT_LT(p.peak_live_bytes, 6 * GiB);
}

TEST(Plausibility, BertBaseAndGnmtOnV100) {
  // BERT-large FP32 pre-training at sequence 128, batch 32 on a V100 32GB: 46.78 sequences/s
  // (NVIDIA DeepLearningExamples, TensorFlow BERT); BERT-base does about a third of the work.
  const double sequences_per_s = throughput(request("bert_base", 32), v100());
  EXPECT_GT(sequences_per_s, 80);
  EXPECT_LT(sequences_per_s, 250);
  // GNMT v2 FP32, batch 128 on a V100 16GB: 21,346 tokens/s (source and target tokens;
  // NVIDIA DeepLearningExamples, PyTorch GNMT). Here every sentence is 50 + 50 tokens.
  const double tokens_per_s = 100 * throughput(request("gnmt", 128), v100());
  EXPECT_GT(tokens_per_s, 10'000);
  EXPECT_LT(tokens_per_s, 45'000);
}

// ---- Options and errors -----------------------------------------------------------------------

TEST(Options, ZooModelsReadTheZoosOptionsInItsOrder) {
  const auto& names = generated_model_names();
  const std::vector<std::string> zoo = {"resnet20", "resnet56", "resnet110",   "resnet50",
                                        "resnet",   "vgg16",    "mobilenetv2", "mlp",
                                        "lstm",     "bert_mini"};
  ASSERT_GE(names.size(), zoo.size() + 8);
  EXPECT_TRUE(std::equal(zoo.begin(), zoo.end(), names.begin()));
  for (const std::string paper : {"inception_v3", "plain20", "squeezenet", "nasnet", "bert_base",
                                  "gnmt", "rhn", "tacotron"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), paper), names.end()) << paper;
  }
  using list = std::vector<std::string>;
  EXPECT_EQ(generated_model_option_names("resnet50"),
            (list{"image_side", "channels", "classes", "width_multiplier", "depth", "seed"}));
  EXPECT_EQ(generated_model_option_names("mobilenetv2"),
            (list{"image_side", "channels", "classes", "width_multiplier", "seed"}));
  EXPECT_EQ(generated_model_option_names("mlp"),
            (list{"image_side", "channels", "classes", "hidden", "layers", "seed"}));
  EXPECT_EQ(generated_model_option_names("lstm"),
            (list{"sequence_length", "vocabulary", "hidden", "layers", "seed"}));
  EXPECT_EQ(generated_model_option_names("bert_mini"),
            (list{"sequence_length", "vocabulary", "hidden", "layers", "heads", "seed"}));
  EXPECT_TRUE(generated_model_option_names("resnet5").empty());
}

TEST(Errors, UnknownModelIsNamedAndSuggested) {
  const std::string message = config_error_message(
      [] { static_cast<void>(generate_profile(request("resnet5", 8), v100())); });
  EXPECT_TRUE(contains(message, "'resnet5'")) << message;
  EXPECT_TRUE(contains(message, "inception_v3")) << message;
  EXPECT_TRUE(contains(message, "did you mean")) << message;
}

TEST(Errors, UnknownOptionListsTheModelsOptions) {
  const std::string message = config_error_message([] {
    static_cast<void>(generate_profile(request("resnet50", 8, {{"image_size", 224}}), v100()));
  });
  EXPECT_TRUE(contains(message, "'image_size'")) << message;
  EXPECT_TRUE(contains(message, "width_multiplier")) << message;
  EXPECT_TRUE(contains(message, "did you mean 'image_side'")) << message;
}

TEST(Errors, OutOfRangeValuesAndBatchesAreRefused) {
  auto refused = [](const model_request& r, const std::string& names) {
    const std::string message =
        config_error_message([&] { static_cast<void>(generate_profile(r, v100())); });
    EXPECT_TRUE(contains(message, names)) << r.model << ": '" << message << "'";
  };
  refused(request("resnet50", 0), "batch size");
  refused(request("resnet50", 8, {{"classes", 1}}), "classes");
  refused(request("resnet50", 8, {{"image_side", 22.5}}), "whole number");
  refused(request("resnet50", 8, {{"width_multiplier", 0}}), "width_multiplier");
  refused(request("resnet56", 8, {{"depth", 20}}), "depth");
  refused(request("resnet", 8), "depth");
  refused(request("vgg16", 8, {{"image_side", 100}}), "multiple of 32");
  refused(request("bert_base", 8, {{"heads", 5}}), "heads must divide hidden");
  refused(request("gnmt", 8, {{"layers", 1}}), "layers");
  refused(request("nasnet", 8, {{"filters", 1000}}), "multiple of 24");
  refused(request("squeezenet", 8, {{"image_side", 16}}), "image_side");
  auto adamw = request("mlp", 8);
  adamw.optimizer = "adamw";
  refused(adamw, "'adamw'");
  EXPECT_THROW(static_cast<void>(parameter_count(request("lstm", 8, {{"hidden", -3}}))),
               config_error);
}

}  // namespace
}  // namespace tandem::sim
