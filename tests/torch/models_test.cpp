// The model zoo: every model builds and gives the right shapes, the parameter counts match the
// papers, bad names and options are config errors that say what to change, batches are
// deterministic, and the small models really learn their tasks.

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tandem/common/error.hpp"
#include "tandem/models/optimizer.hpp"
#include "tandem/models/option_ranges.hpp"
#include "tandem/models/zoo.hpp"

namespace tandem::models {
namespace {

model_options images(std::int64_t side) {
  model_options options;
  options.image_side = side;
  return options;
}

model_options sequences(std::int64_t length, std::int64_t vocabulary, std::int64_t hidden) {
  model_options options;
  options.sequence_length = length;
  options.vocabulary = vocabulary;
  options.hidden = hidden;
  return options;
}

/// The message of the config_error that building `name` with `options` raises ("" if none).
std::string build_error(const std::string& name, const model_options& options) {
  try {
    (void)make_model(name, options);
  } catch (const config_error& e) {
    return e.what();
  }
  return "";
}

TEST(ModelsZoo, ListsEveryArchitecture) {
  const auto names = model_names();
  for (const char* expected : {"resnet20", "resnet56", "resnet110", "resnet50", "vgg16",
                               "mobilenetv2", "lstm", "bert_mini", "mlp"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), expected), names.end()) << expected;
  }
}

TEST(ModelsZoo, AnUnknownNameIsAConfigErrorListingTheKnownOnes) {
  const auto message = build_error("resnet18", images(32));
  EXPECT_NE(message.find("unknown model 'resnet18'"), std::string::npos) << message;
  EXPECT_NE(message.find("resnet20"), std::string::npos) << message;
  EXPECT_NE(message.find("bert_mini"), std::string::npos) << message;
}

TEST(ModelsZoo, OptionsAnArchitectureCannotTakeAreConfigErrorsNamingTheProblem) {
  struct bad_case {
    const char* name;
    model_options options;
    const char* expected;
  };
  std::vector<bad_case> cases;
  auto add = [&](const char* name, const char* expected, auto change) {
    model_options options = images(32);
    change(options);
    cases.push_back({name, options, expected});
  };
  add("resnet", "20, 56 or 110", [](auto& o) { o.depth = 32; });
  add("resnet20", "has depth 20 but model_options.depth is 56", [](auto& o) { o.depth = 56; });
  add("resnet20", "width_multiplier", [](auto& o) { o.width_multiplier = 0; });
  add("vgg16", "multiple of 32", [](auto& o) { o.image_side = 48; });
  add("mlp", "option classes must be a whole number from 2", [](auto& o) { o.classes = 1; });
  add("mlp", "option hidden must be a whole number from 1 to 16384, not 0",
      [](auto& o) { o.hidden = 0; });
  add("mlp", "not 100000000", [](auto& o) { o.hidden = 100'000'000; });
  add("mobilenetv2", "image_side", [](auto& o) { o.image_side = 0; });
  add("lstm", "vocabulary", [](auto& o) { o.vocabulary = 0; });
  add("bert_mini", "heads must divide hidden", [](auto& o) { o.heads = 3; });
  add("bert_mini", "option layers must be a whole number from 1", [](auto& o) { o.layers = 0; });
  for (const auto& c : cases) {
    const auto message = build_error(c.name, c.options);
    EXPECT_NE(message.find(c.expected), std::string::npos)
        << c.name << ": expected '" << c.expected << "' in '" << message << "'";
  }
}

// The zoo and the simulator read one option table (issue 14): the same names and defaults.
TEST(ModelsZoo, OptionNamesAndDefaultsComeFromTheTableTheSimulatorShares) {
  for (const auto& name : model_names()) {
    const auto* ranges = zoo_option_ranges(name);
    ASSERT_NE(ranges, nullptr) << name;
    EXPECT_EQ(model_option_names(name), option_names(*ranges)) << name;
  }
  EXPECT_EQ(default_options("mlp").hidden, 128);
  EXPECT_EQ(default_options("vgg16").hidden, 512);  // the classifier's width
  auto wide = default_options("vgg16");
  wide.hidden = 1024;
  EXPECT_EQ(make_model("vgg16", wide)->parameter_count() -
                make_model("vgg16", default_options("vgg16"))->parameter_count(),
            // The classifier over a 1x1x512 map holds h^2 + 524h + 10 parameters.
            (1024 * 1024 + 524 * 1024) - (512 * 512 + 524 * 512));
}

TEST(ModelsZoo, FieldsAModelDoesNotReadAreNotChecked) {
  model_options options = images(16);
  options.vocabulary = 0;  // image models have no vocabulary
  options.hidden = 0;      // and the convolutional ones no hidden width
  EXPECT_NO_THROW((void)make_model("resnet20", options));
  options = sequences(8, 20, 16);
  options.image_side = 0;  // sequence models have no images
  options.classes = 0;
  EXPECT_NO_THROW((void)make_model("lstm", options));
}

TEST(ModelsZoo, ABatchTooSmallForBatchNormIsAConfigError) {
  const auto net = make_model("resnet50", images(32));  // the last stage sees 1x1 maps
  EXPECT_EQ(net->min_batch_size(), 2);
  EXPECT_THROW((void)net->make_batch(1, 0), config_error);
  EXPECT_EQ(make_model("resnet20", images(32))->min_batch_size(), 1);
  EXPECT_THROW((void)make_model("mlp", images(8))->make_batch(0, 0), config_error);
}

// ---- shapes and parameter counts ----------------------------------------------------------

struct shape_case {
  std::string name;
  model_options options;
  std::int64_t batch;
  std::vector<std::int64_t> input_shape;
  std::vector<std::int64_t> output_shape;
  std::int64_t parameters;  ///< the published figure at 10 classes, or a count by hand
};

std::vector<shape_case> shape_cases() {
  const auto lstm = sequences(12, 50, 32);
  const auto bert = [] {
    auto o = sequences(12, 50, 32);
    o.heads = 4;
    return o;
  }();
  auto small_mlp = images(8);
  small_mlp.hidden = 64;
  const std::int64_t h = 32;
  const std::int64_t v = 50;
  return {
      // He et al. 2016, table 6 (0.27M, 0.85M, 1.7M), option A shortcuts.
      {"resnet20", images(16), 2, {2, 3, 16, 16}, {2, 10}, 269'722},
      {"resnet56", images(16), 2, {2, 3, 16, 16}, {2, 10}, 853'018},
      {"resnet110", images(8), 2, {2, 3, 8, 8}, {2, 10}, 1'727'962},
      // torchvision: resnet50 25,557,032 at 1000 classes; less 990 x (2048 + 1).
      {"resnet50", images(32), 2, {2, 3, 32, 32}, {2, 10}, 23'528'522},
      // torchvision vgg16_bn features (14,714,688 conv + 8,448 bn) + 512-512-10 classifier.
      {"vgg16", default_options("vgg16"), 2, {2, 3, 32, 32}, {2, 10}, 14'723'136 + 530'442},
      // torchvision: mobilenet_v2 3,504,872 at 1000 classes; less 990 x (1280 + 1).
      {"mobilenetv2", images(32), 2, {2, 3, 32, 32}, {2, 10}, 2'236'682},
      {"mlp", small_mlp, 4, {4, 3, 8, 8}, {4, 10}, (192 * 64 + 64) + (64 * 64 + 64) + 650},
      // embedding + 2 LSTM layers (4 gates, two biases) + projection.
      {"lstm", lstm, 3, {3, 12}, {3, 12, v}, v * h + 2 * (4 * h * 2 * h + 8 * h) + h * v + v},
      // tokens (+ mask) and positions, layer norm, 2 encoder layers (attention 4h^2 + 4h,
      // feed-forward 8h^2 + 5h, two layer norms 4h), head.
      {"bert_mini",
       bert,
       3,
       {3, 12},
       {3, 12, v},
       (v + 1) * h + 12 * h + 2 * h + 2 * (12 * h * h + 13 * h) + h * v + v},
  };
}

void PrintTo(const shape_case& c, std::ostream* out) {
  *out << c.name;
}

class ModelsShapes : public ::testing::TestWithParam<shape_case> {};

TEST_P(ModelsShapes, ForwardGivesTheOutputShapeAndTheParameterCountIsTheKnownOne) {
  const auto& c = GetParam();
  auto net = make_model(c.name, c.options);
  EXPECT_EQ(net->name(), c.name);
  EXPECT_EQ(net->parameter_count(), c.parameters);
  const auto data = net->make_batch(c.batch, 7);
  EXPECT_EQ(data.input.sizes().vec(), c.input_shape);
  const auto output = net->forward(data.input);
  EXPECT_EQ(output.sizes().vec(), c.output_shape);
  const auto loss = net->loss(output, data.target);
  EXPECT_EQ(loss.dim(), 0);
  EXPECT_TRUE(std::isfinite(loss.item<double>()));
  loss.backward();
  for (const auto& parameter : net->parameters()) ASSERT_TRUE(parameter.grad().defined());
}

INSTANTIATE_TEST_SUITE_P(Zoo, ModelsShapes, ::testing::ValuesIn(shape_cases()),
                         [](const ::testing::TestParamInfo<shape_case>& c) {
                           return c.param.name;
                         });

TEST(ModelsShapes, BertRejectsSequencesLongerThanItWasBuiltFor) {
  auto net = make_model("bert_mini", sequences(8, 20, 16));
  EXPECT_THROW((void)net->forward(torch::zeros({1, 9}, torch::kLong)), usage_error);
}

// ---- determinism --------------------------------------------------------------------------

TEST(ModelsDeterminism, BatchesAndInitialWeightsDependOnTheSeedsAlone) {
  auto options = sequences(10, 30, 16);
  auto a = make_model("bert_mini", options);
  auto b = make_model("bert_mini", options);
  EXPECT_TRUE(torch::equal(a->make_batch(4, 3).input, b->make_batch(4, 3).input));
  EXPECT_TRUE(torch::equal(a->make_batch(4, 3).target, b->make_batch(4, 3).target));
  EXPECT_FALSE(torch::equal(a->make_batch(4, 3).input, a->make_batch(4, 4).input));
  const auto pa = a->parameters();
  const auto pb = b->parameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (std::size_t i = 0; i < pa.size(); ++i) EXPECT_TRUE(torch::equal(pa[i], pb[i]));
  options.seed = 1;
  auto c = make_model("bert_mini", options);
  EXPECT_FALSE(torch::equal(a->parameters()[0], c->parameters()[0]));
  EXPECT_FALSE(torch::equal(a->make_batch(4, 3).input, c->make_batch(4, 3).input))
      << "another seed, another teacher";
}

TEST(ModelsDeterminism, MaskedBatchesHideTokensBehindTheMaskId) {
  auto net = make_model("bert_mini", sequences(16, 40, 16));
  const auto data = net->make_batch(8, 0);
  const auto masked = data.input.eq(40);
  EXPECT_TRUE(masked.any(1).all().item<bool>()) << "every sequence has a masked token";
  EXPECT_TRUE(torch::equal(masked, data.target.ne(-100)));
}

// ---- learning -----------------------------------------------------------------------------

struct losses {
  double first;
  double last;
};

/// Loss on a held-out batch before and after `steps` steps.
losses train(model& net, const std::string& optimizer, double learning_rate,
             std::int64_t batch_size, int steps) {
  auto opt = make_optimizer(optimizer, net.parameters(), learning_rate);
  const auto held_out = net.make_batch(batch_size, 1'000'000);
  auto evaluate = [&] {
    torch::NoGradGuard no_grad;
    return net.loss(net.forward(held_out.input), held_out.target).item<double>();
  };
  const double first = evaluate();
  for (int step = 0; step < steps; ++step) {
    const auto data = net.make_batch(batch_size, static_cast<std::uint64_t>(step));
    auto loss = net.loss(net.forward(data.input), data.target);
    opt->zero_grad();
    loss.backward();
    opt->step();
  }
  const double last = evaluate();
  ::testing::Test::RecordProperty("initial_loss", std::to_string(first));
  ::testing::Test::RecordProperty("final_loss", std::to_string(last));
  return {first, last};
}

TEST(ModelsTraining, MlpLearnsThePrototypes) {
  auto options = images(8);
  options.hidden = 64;
  auto net = make_model("mlp", options);
  const auto [first, last] = train(*net, "sgd", 0.02, 32, 30);
  EXPECT_LT(last, 0.7 * first) << first << " -> " << last;
}

TEST(ModelsTraining, Resnet20LearnsThePrototypes) {
  auto net = make_model("resnet20", images(16));
  const auto [first, last] = train(*net, "sgd", 0.05, 16, 40);
  EXPECT_LT(last, 0.7 * first) << first << " -> " << last;
}

TEST(ModelsTraining, LstmLearnsTheMarkovChain) {
  auto net = make_model("lstm", sequences(16, 32, 32));
  const auto [first, last] = train(*net, "adam", 0.01, 16, 30);
  EXPECT_LT(last, 0.7 * first) << first << " -> " << last;
}

TEST(ModelsTraining, BertMiniLearnsTheMaskedTokens) {
  // Short sequences and a large batch: attention to the neighbours of a masked token forms
  // after a few dozen steps (the loss plateaus near ln(vocabulary) - 1 until it does).
  auto options = sequences(8, 32, 32);
  options.heads = 4;
  auto net = make_model("bert_mini", options);
  const auto [first, last] = train(*net, "adam", 0.007, 64, 80);
  EXPECT_LT(last, 0.7 * first) << first << " -> " << last;
}

// ---- optimizers ---------------------------------------------------------------------------

TEST(ModelsOptimizer, SgdAndAdamAreKnownAndBadInputIsAConfigError) {
  auto net = make_model("mlp", images(4));
  EXPECT_NE(dynamic_cast<torch::optim::SGD*>(make_optimizer("sgd", net->parameters(), 0.1).get()),
            nullptr);
  EXPECT_NE(
      dynamic_cast<torch::optim::Adam*>(make_optimizer("adam", net->parameters(), 1e-3).get()),
      nullptr);
  try {
    (void)make_optimizer("rmsprop", net->parameters(), 0.1);
    ADD_FAILURE() << "rmsprop is not an optimizer of tandem";
  } catch (const config_error& e) {
    EXPECT_NE(std::string(e.what()).find("known optimizers: sgd, adam"), std::string::npos);
  }
  EXPECT_THROW((void)make_optimizer("sgd", net->parameters(), 0.0), config_error);
  EXPECT_THROW((void)make_optimizer("adam", net->parameters(), -1e-3), config_error);
  EXPECT_THROW((void)make_optimizer("sgd", net->parameters(), std::nan("")), config_error);
}

}  // namespace
}  // namespace tandem::models
