// Typed op attributes (ir/op_attrs.h): every op of the list has a struct,
// each struct survives its encoding, the encodings are the layouts graphs
// hashed before the structs came in, and a mismatch of op and struct is
// caught.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ir/op_attrs.h"
#include "ordo/error.h"

namespace ordo {
namespace {

using ir::OpKind;

std::vector<int64_t> ints_of(const ir::Attrs& attrs) { return {attrs.ints.begin(), attrs.ints.end()}; }
std::vector<double> reals_of(const ir::Attrs& attrs) { return {attrs.reals.begin(), attrs.reals.end()}; }

// decode(encode(a)) encodes as a does: nothing is lost or reordered.
template <OpKind op>
ir::OpAttrs<op> round_trip(const ir::OpAttrs<op>& attrs) {
  const ir::Attrs encoded = ir::encode<op>(attrs);
  ir::OpAttrs<op> decoded = ir::decode<op>(encoded);
  EXPECT_EQ(ir::encode<op>(decoded), encoded) << ir::op_name(op);
  return decoded;
}

TEST(OpAttrsTest, EveryOpNamesAStructThatEncodes) {
  for (int i = 0; i < ir::kNumOps; ++i) {
    const auto op = static_cast<OpKind>(i);
    const std::string_view name = ir::attrs_struct_name(op);
    EXPECT_TRUE(name.ends_with("Attrs")) << ir::op_name(op) << ": " << name;
  }
  EXPECT_EQ(ir::attrs_struct_name(OpKind::kSlice), "SliceAttrs");
  EXPECT_EQ(ir::attrs_struct_name(OpKind::kAdd), "NoAttrs");
  EXPECT_EQ(ir::attrs_struct_name(OpKind::kConvWeightGrad), "ConvAttrs");
  EXPECT_EQ(ir::attrs_struct_name(OpKind::kCollectiveBroadcast), "CollectiveAttrs");
  EXPECT_TRUE(ir::op_takes<ir::ReduceAttrs>(OpKind::kArgmax));
  EXPECT_FALSE(ir::op_takes<ir::ReduceAttrs>(OpKind::kSlice));
  EXPECT_TRUE(ir::op_takes<ir::AxisAttrs>(OpKind::kScatterAdd));
  static_assert(std::is_same_v<ir::OpAttrs<OpKind::kMaxPool2dBackward>, ir::MaxPoolAttrs>);
  static_assert(std::is_same_v<ir::OpAttrs<OpKind::kDeviceData>, ir::NoAttrs>);
}

TEST(OpAttrsTest, ScalarsRangesAndCastsRoundTrip) {
  const ir::FullAttrs full{{-3, -3.5}};
  EXPECT_EQ(round_trip<OpKind::kFull>(full), full);
  const ir::ArangeAttrs range{{1, 1.25}, {-2, -0.5}};
  EXPECT_EQ(round_trip<OpKind::kArange>(range), range);
  EXPECT_TRUE(round_trip<OpKind::kCast>({true}).float32_compute);
  EXPECT_FALSE(round_trip<OpKind::kCast>({false}).float32_compute);
  EXPECT_EQ(round_trip<OpKind::kRandomUniform>({-1.5, 2.0}), (ir::RandomUniformAttrs{-1.5, 2.0}));
  EXPECT_EQ(round_trip<OpKind::kBatchNormTraining>({1e-3}), ir::BatchNormAttrs{1e-3});
}

TEST(OpAttrsTest, ListsRoundTripAsViewsOfTheEncoding) {
  const std::vector<int64_t> axes{0, 2, 5};
  const ir::Attrs reduce = ir::encode<OpKind::kMean>({axes, true});
  const ir::ReduceAttrs decoded = ir::decode<OpKind::kMean>(reduce);
  EXPECT_EQ(std::vector<int64_t>(decoded.axes.begin(), decoded.axes.end()), axes);
  EXPECT_TRUE(decoded.keepdim);
  EXPECT_EQ(decoded.axes.data(), reduce.ints.data());  // a view, no copy
  const std::vector<int64_t> none;
  EXPECT_TRUE(ir::decode<OpKind::kSum>(ir::encode<OpKind::kSum>({none, false})).axes.empty());
  const std::vector<int64_t> perm{2, 0, 1};
  const ir::Attrs permute = ir::encode<OpKind::kPermute>({perm});
  const auto permutation = ir::decode<OpKind::kPermute>(permute).permutation;
  EXPECT_EQ(std::vector<int64_t>(permutation.begin(), permutation.end()), perm);
}

TEST(OpAttrsTest, MovementPoolingAndMatmulRoundTrip) {
  EXPECT_EQ(round_trip<OpKind::kSlice>({2, -7, 3}), (ir::SliceAttrs{2, -7, 3}));
  for (OpKind op : {OpKind::kConcat, OpKind::kIndexSelect, OpKind::kGather, OpKind::kScatterAdd}) {
    EXPECT_EQ(ir::decode<ir::AxisAttrs>(op, ir::encode(op, ir::AxisAttrs{4})).axis, 4) << ir::op_name(op);
  }
  const ir::MaxPoolAttrs max{{{3, 2}, {2, 1}, {1, 0}}, {2, 1}, true};
  EXPECT_EQ(round_trip<OpKind::kMaxPool2d>(max), max);
  const ir::AvgPoolAttrs avg{{{2, 3}, {1, 2}, {0, 1}}, false, 5};
  EXPECT_EQ(round_trip<OpKind::kAvgPool2dBackward>(avg), avg);
  for (bool a : {false, true}) {
    for (bool b : {false, true}) EXPECT_EQ(round_trip<OpKind::kMatmul>({a, b}), (ir::MatmulAttrs{a, b}));
  }
  // A matmul node records none: an untransposed product.
  EXPECT_EQ(ir::decode<OpKind::kMatmul>({}), ir::MatmulAttrs{});
}

TEST(OpAttrsTest, ConvolutionsAndCollectivesRoundTrip) {
  const ir::ConvAttrs conv = round_trip<OpKind::kConvInputGrad>({2, {{2, 1, 0, 1}, {1, 0, 1, 3}}});
  ASSERT_EQ(conv.dims.size(), 2u);
  EXPECT_EQ(conv.groups, 2);
  EXPECT_EQ(conv.dims[1].pad_end, 1);
  EXPECT_EQ(conv.dims[1].dilation, 3);
  ir::CollectiveAttrs c;
  c.reduce = ReduceType::kMax;
  c.scale = 0.5;
  c.dim = 1;
  c.concat_dim = 2;
  c.root = 3;
  c.groups = {{0, 2}, {1, 3}};
  c.pairs = {{0, 1}, {1, 0}};
  c.token_operand = false;
  const ir::CollectiveAttrs back = round_trip<OpKind::kAllToAll>(c);
  EXPECT_EQ(back.reduce, ReduceType::kMax);
  EXPECT_EQ(back.groups, c.groups);
  EXPECT_EQ(back.pairs, c.pairs);
  EXPECT_EQ(back.root, 3);
  EXPECT_FALSE(back.token_operand);
}

// The layouts that graphs hashed before the structs: a change here changes
// every graph's hash (and what a compiled plan is reused for).
TEST(OpAttrsTest, EncodingsKeepTheHashedLayouts) {
  const ir::Attrs slice = ir::encode<OpKind::kSlice>({1, 2, 3});
  EXPECT_EQ(ints_of(slice), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_TRUE(slice.reals.empty());
  const ir::Attrs range = ir::encode<OpKind::kArange>({{1, 1.5}, {2, 2.5}});
  EXPECT_EQ(ints_of(range), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(reals_of(range), (std::vector<double>{1.5, 2.5}));
  const ir::Attrs avg = ir::encode<OpKind::kAvgPool2d>({{{2, 3}, {4, 5}, {1, 0}}, true, 7});
  EXPECT_EQ(ints_of(avg), (std::vector<int64_t>{2, 3, 4, 5, 1, 0, 1, 7}));
  const ir::Attrs max = ir::encode<OpKind::kMaxPool2d>({{{2, 3}, {4, 5}, {1, 0}}, {1, 2}, true});
  EXPECT_EQ(ints_of(max), (std::vector<int64_t>{2, 3, 4, 5, 1, 0, 1, 2}));
  EXPECT_TRUE(max.flag);
  const std::vector<int64_t> axes{1};
  EXPECT_TRUE(ir::encode<OpKind::kMax>({axes, true}).flag);
  EXPECT_EQ(ints_of(ir::encode<OpKind::kMatmul>({true, false})), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(reals_of(ir::encode<OpKind::kRandomUniform>({0.25, 0.75})), (std::vector<double>{0.25, 0.75}));
  EXPECT_EQ(ir::encode<OpKind::kAdd>({}), ir::Attrs{});
}

TEST(OpAttrsTest, EqualAttrsHashEqual) {
  auto node = [](int64_t start) {
    return ir::make_node(OpKind::kArange, {}, {ir::ValueType{DType::kInt64, {4}}},
                         ir::encode<OpKind::kArange>({{start, double(start)}, {1, 1.0}}));
  };
  EXPECT_EQ(node(2)->hash(), node(2)->hash());
  EXPECT_NE(node(2)->hash(), node(3)->hash());
}

TEST(OpAttrsTest, AStructThatIsNotTheOpsIsAnInternalError) {
  try {
    (void)ir::encode(OpKind::kSlice, ir::AxisAttrs{0});
    FAIL() << "encoded AxisAttrs for slice";
  } catch (const InternalError& e) {
    EXPECT_NE(std::string(e.what()).find("slice's attrs are SliceAttrs"), std::string::npos) << e.what();
  }
  const ir::Attrs sum = ir::encode<OpKind::kSum>({{}, false});
  EXPECT_THROW((void)ir::decode<ir::SliceAttrs>(OpKind::kSum, sum), InternalError);
  // Attrs of the wrong size for the struct (a builder bug) do not decode.
  EXPECT_THROW((void)ir::decode<OpKind::kSlice>(sum), InternalError);
}

}  // namespace
}  // namespace ordo
