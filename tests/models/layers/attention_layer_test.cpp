// The attention layer (layers/attention_layer.hpp) against an explicit float64 softmax: plain,
// joint with text, masked text keys, ragged entries; the same calls under a sequence group of 2
// (in-process) give the values of the call without a group.
#include "omnidp/models/layers/attention_layer.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "models/in_process_group.hpp"
#include "omnidp/common/error.hpp"

namespace omnidp::models {
namespace {

// softmax(q k^T / sqrt(D)) v over [B, L, H, D] in float64, keys where `keys` [B, Lk] is true
// (undefined: all): [B, Lq, H*D] float.
torch::Tensor reference(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                        const torch::Tensor& keys = {}) {
  const auto qd = q.to(torch::kFloat64).transpose(1, 2);
  const auto kd = k.to(torch::kFloat64).transpose(1, 2);
  const auto vd = v.to(torch::kFloat64).transpose(1, 2);
  auto scores = torch::matmul(qd, kd.transpose(2, 3)) / std::sqrt(static_cast<double>(q.size(3)));
  if (keys.defined()) {
    scores = scores.masked_fill(keys.logical_not().view({keys.size(0), 1, 1, keys.size(1)}),
                                -std::numeric_limits<double>::infinity());
  }
  return torch::matmul(torch::softmax(scores, -1), vd).transpose(1, 2).flatten(2).to(torch::kFloat);
}

struct Inputs {
  torch::Tensor q, k, v, cq, ck, cv;
};

Inputs inputs() {
  torch::manual_seed(11);
  // [B 2, N 5 (padded over 2 ranks), H 4, D 8] video, [B 2, Lc 3, H 4, D 8] text.
  return {torch::randn({2, 5, 4, 8}), torch::randn({2, 5, 4, 8}), torch::randn({2, 5, 4, 8}),
          torch::randn({2, 3, 4, 8}), torch::randn({2, 3, 4, 8}), torch::randn({2, 3, 4, 8})};
}

torch::Tensor joint(const torch::Tensor& a, const torch::Tensor& b) {
  return torch::cat({a, b}, 1);
}

bool close(const torch::Tensor& a, const torch::Tensor& b) {
  return torch::allclose(a, b, 1e-5, 1e-5);
}

TEST(AttentionLayer, WithoutTextItIsTheVideoTokensAttention) {
  const auto in = inputs();
  const auto [video, text] = attend(SequenceShard{}, in.q, in.k, in.v);
  EXPECT_FALSE(text.defined());
  EXPECT_EQ(video.sizes(), (std::vector<std::int64_t>{2, 5, 32}));
  EXPECT_TRUE(close(video, reference(in.q, in.k, in.v)));
}

TEST(AttentionLayer, JointTextAttendsAsOneSequence) {
  const auto in = inputs();
  const auto want = reference(joint(in.q, in.cq), joint(in.k, in.ck), joint(in.v, in.cv));
  const auto [video, text] = attend(SequenceShard{}, in.q, in.k, in.v, {in.cq, in.ck, in.cv, {}, {}});
  EXPECT_TRUE(close(video, want.narrow(1, 0, 5)));
  EXPECT_TRUE(close(text, want.narrow(1, 5, 3)));
}

TEST(AttentionLayer, AMaskedTextTokenIsNoKeyAndItsRowIsZero) {
  const auto in = inputs();
  const auto mask = torch::tensor({{1, 1, 0}, {1, 0, 0}}).to(torch::kBool);
  const auto keys = torch::cat({torch::ones({2, 5}, torch::kBool), mask}, 1);
  const auto want = reference(joint(in.q, in.cq), joint(in.k, in.ck), joint(in.v, in.cv), keys);
  const auto [video, text] =
      attend(SequenceShard{}, in.q, in.k, in.v, {in.cq, in.ck, in.cv, mask, {}});
  EXPECT_TRUE(close(video, want.narrow(1, 0, 5)));
  EXPECT_TRUE(close(text.select(1, 0), want.select(1, 5)));
  EXPECT_TRUE(torch::equal(text.select(1, 2), torch::zeros({2, 32})));
  EXPECT_TRUE(torch::equal(text[1].select(0, 1), torch::zeros({32})));
  EXPECT_FALSE(torch::isnan(text).any().item<bool>());
}

TEST(AttentionLayer, RaggedEntriesAttendOverTheirOwnTextAndEqualTheMaskedLayout) {
  const auto in = inputs();
  const auto mask = torch::tensor({{1, 1, 0}, {1, 0, 0}}).to(torch::kBool);
  const auto [video, text] =
      attend(SequenceShard{}, in.q, in.k, in.v, {in.cq, in.ck, in.cv, {}, {2, 1}});
  for (std::int64_t b = 0; b < 2; ++b) {
    const auto t = b == 0 ? 2 : 1;
    const auto one = [&](const torch::Tensor& x, const torch::Tensor& c) {
      return joint(x.narrow(0, b, 1), c.narrow(0, b, 1).narrow(1, 0, t));
    };
    const auto want = reference(one(in.q, in.cq), one(in.k, in.ck), one(in.v, in.cv));
    EXPECT_TRUE(close(video.narrow(0, b, 1), want.narrow(1, 0, 5))) << b;
    EXPECT_TRUE(close(text.narrow(0, b, 1).narrow(1, 0, t), want.narrow(1, 5, t))) << b;
    EXPECT_TRUE(torch::equal(text[b].narrow(0, t, 3 - t), torch::zeros({3 - t, 32}))) << b;
  }
  const auto masked = attend(SequenceShard{}, in.q, in.k, in.v, {in.cq, in.ck, in.cv, mask, {}});
  EXPECT_TRUE(close(video, masked.first));
  EXPECT_TRUE(close(text, masked.second));
}

TEST(AttentionLayer, RaggedLengthsMustMatchTheBatch) {
  const auto in = inputs();
  try {
    (void)attend(SequenceShard{}, in.q, in.k, in.v, {in.cq, in.ck, in.cv, {}, {2}});
    FAIL() << "no error";
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("1 text lengths for a batch of 2"), std::string::npos)
        << e.what();
  }
}

TEST(AttentionLayer, UnderASequenceGroupItGivesTheValuesWithoutOne) {
  const auto in = inputs();
  const auto mask = torch::tensor({{1, 1, 0}, {1, 0, 0}}).to(torch::kBool);
  const JointText none;
  const JointText all{in.cq, in.ck, in.cv, {}, {}};
  const JointText masked{in.cq, in.ck, in.cv, mask, {}};
  const JointText ragged{in.cq, in.ck, in.cv, mask, {2, 1}};  // Ulysses: the mask says the same
  const std::vector<JointText> cases{none, all, masked, ragged};
  std::vector<std::pair<torch::Tensor, torch::Tensor>> want;
  for (const auto& c : cases) want.push_back(attend(SequenceShard{}, in.q, in.k, in.v, c));
  std::vector<std::vector<std::pair<torch::Tensor, torch::Tensor>>> got(2);
  testing::on_group(
      2,
      [&](int r, Collective& group) {
        const auto s = make_sequence_shard(&group, 5);
        const auto mine = [&](const torch::Tensor& x) { return shard_tokens(s, x, 1); };
        for (const auto& c : cases) {
          auto [video, text] = attend(s, mine(in.q), mine(in.k), mine(in.v), c);
          got[static_cast<std::size_t>(r)].emplace_back(gather_tokens(s, video), text);
        }
      },
      "test sequence group");
  for (std::size_t r = 0; r < 2; ++r) {
    for (std::size_t c = 0; c < cases.size(); ++c) {
      EXPECT_TRUE(close(got[r][c].first, want[c].first)) << "rank " << r << " case " << c;
      EXPECT_EQ(got[r][c].second.defined(), want[c].second.defined()) << c;
      if (want[c].second.defined()) {
        EXPECT_TRUE(close(got[r][c].second, want[c].second)) << c;
      }
    }
  }
}

}  // namespace
}  // namespace omnidp::models
