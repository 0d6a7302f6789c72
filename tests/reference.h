// Plain reference loops for the op tests, and the fixture that compares
// ordo's results with them.
//
//   HostArray a = sample({2, 3}, DType::kInt32), b = sample({3}, DType::kFloat32);
//   HostArray want = broadcast_map({a, b}, [](const Values& v) { return v[0] + v[1]; });
//   expect("add", add(to_tensor(a, DType::kInt32), to_tensor(b, DType::kFloat32)),
//          DType::kFloat32, want);
//   verify();  // reads every result the way the test's ReadMode says
//
// References compute in double, which holds every number the tests use
// exactly; results are compared after rounding the reference to the result's
// dtype.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <limits>
#include <ostream>
#include <source_location>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ordo/ordo.h"
#include "test_util.h"

namespace ordo {

// gtest prints dtypes by name in failures.
inline void PrintTo(DType dtype, std::ostream* out) { *out << dtype_name(dtype); }

namespace testing {

using Index = std::vector<int64_t>;
using Values = std::vector<double>;

// In the documented promotion order: bool < int32 < int64 < float32 < float64.
inline constexpr DType kAllDTypes[] = {DType::kBool, DType::kInt32, DType::kInt64, DType::kFloat32,
                                       DType::kFloat64};

// A host tensor: row-major values.
struct HostArray {
  Shape shape;
  Values values;
};

// Every index of a shape in row-major order (the last axis fastest):
//   for (Odometer it(shape); !it.done(); it.next()) use(it.index());
// A 0-d shape has one index, {}; a shape with a 0 in it has none.
class Odometer {
 public:
  explicit Odometer(Shape shape)
      : shape_(std::move(shape)), index_(shape_.size(), 0), done_(shape_numel(shape_) == 0) {}
  bool done() const { return done_; }
  const Index& index() const { return index_; }
  void next() {
    for (size_t d = shape_.size(); d-- > 0;) {
      if (++index_[d] < shape_[d]) return;
      index_[d] = 0;
    }
    done_ = true;
  }

 private:
  Shape shape_;
  Index index_;
  bool done_;
};

// Row-major offset in `shape` of the element that index `at` (of a shape at
// least as long) reads under numpy broadcasting: dims align from the right
// and size-1 dims always read element 0.
inline int64_t broadcast_offset(const Shape& shape, const Index& at) {
  const size_t lead = at.size() - shape.size();
  int64_t offset = 0;
  for (size_t d = 0; d < shape.size(); ++d) {
    offset = offset * shape[d] + (shape[d] == 1 ? 0 : at[lead + d]);
  }
  return offset;
}

// numpy broadcasting of two shapes that the caller knows are compatible.
inline Shape broadcast_shape(const Shape& a, const Shape& b) {
  const Shape& longer = a.size() >= b.size() ? a : b;
  const Shape& shorter = a.size() >= b.size() ? b : a;
  Shape out = longer;
  const size_t lead = longer.size() - shorter.size();
  for (size_t d = 0; d < shorter.size(); ++d) {
    if (out[lead + d] == 1) out[lead + d] = shorter[d];
  }
  return out;
}

using ElementFn = std::function<double(const Values&)>;

// out[at] = f({in[0][at], in[1][at], ...}) with every input broadcast to
// out_shape: the reference of every elementwise op.
inline HostArray broadcast_map(const Shape& out_shape, const std::vector<HostArray>& in,
                               const ElementFn& f) {
  HostArray out{out_shape, {}};
  Values operands(in.size());
  for (Odometer it(out_shape); !it.done(); it.next()) {
    for (size_t k = 0; k < in.size(); ++k) {
      operands[k] = in[k].values[broadcast_offset(in[k].shape, it.index())];
    }
    out.values.push_back(f(operands));
  }
  return out;
}

inline HostArray broadcast_map(const std::vector<HostArray>& in, const ElementFn& f) {
  Shape shape;
  for (const HostArray& x : in) shape = broadcast_shape(shape, x.shape);
  return broadcast_map(shape, in, f);
}

// out[at] = x[source(at)] for every index of out_shape: the reference of every
// movement op.
inline HostArray pick(const HostArray& x, const Shape& out_shape,
                      const std::function<Index(const Index&)>& source) {
  HostArray out{out_shape, {}};
  for (Odometer it(out_shape); !it.done(); it.next()) {
    out.values.push_back(x.values[broadcast_offset(x.shape, source(it.index()))]);
  }
  return out;
}

// An axis in [-rank, rank) made non-negative.
inline int64_t wrap_axis(int64_t axis, size_t rank) {
  return axis < 0 ? axis + static_cast<int64_t>(rank) : axis;
}

inline Shape batch_of(const Shape& matrix_shape) {
  return Shape(matrix_shape.begin(), matrix_shape.end() - 2);
}

// numpy.matmul in plain loops: a 1-D left operand is a row, a 1-D right
// operand a column; out_shape (with those dims dropped) is the caller's.
inline HostArray matmul_reference(HostArray a, HostArray b, const Shape& out_shape) {
  if (a.shape.size() == 1) a.shape.insert(a.shape.begin(), 1);
  if (b.shape.size() == 1) b.shape.push_back(1);
  const int64_t m = a.shape[a.shape.size() - 2], k = a.shape.back(), n = b.shape.back();
  HostArray out{out_shape, {}};
  for (Odometer it(broadcast_shape(batch_of(a.shape), batch_of(b.shape))); !it.done(); it.next()) {
    const int64_t a0 = broadcast_offset(batch_of(a.shape), it.index()) * m * k;
    const int64_t b0 = broadcast_offset(batch_of(b.shape), it.index()) * k * n;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double dot = 0;
        for (int64_t p = 0; p < k; ++p) dot += a.values[a0 + i * k + p] * b.values[b0 + p * n + j];
        out.values.push_back(dot);
      }
    }
  }
  return out;
}

// x with its axes in the order dims (negative dims count from the end).
inline HostArray permute_reference(const HostArray& x, const std::vector<int64_t>& dims) {
  Shape out;
  for (int64_t d : dims) out.push_back(x.shape[wrap_axis(d, dims.size())]);
  return pick(x, out, [&](const Index& at) {
    Index source(dims.size());
    for (size_t d = 0; d < dims.size(); ++d) source[wrap_axis(dims[d], dims.size())] = at[d];
    return source;
  });
}

// Reduces the given axes (empty: all) by f, which gets the reduced values of
// one output element in row-major order of the reduced axes.
inline HostArray reduce_reference(const HostArray& x, const std::vector<int64_t>& axes,
                                  bool keepdim, const ElementFn& f) {
  std::vector<bool> reduced(x.shape.size(), axes.empty());
  for (int64_t axis : axes) reduced[wrap_axis(axis, x.shape.size())] = true;
  Shape kept_shape, out_shape;
  for (size_t d = 0; d < x.shape.size(); ++d) {
    if (!reduced[d]) kept_shape.push_back(x.shape[d]);
    if (!reduced[d] || keepdim) out_shape.push_back(reduced[d] ? 1 : x.shape[d]);
  }
  std::vector<Values> groups(shape_numel(kept_shape));
  size_t flat = 0;
  for (Odometer it(x.shape); !it.done(); it.next(), ++flat) {
    Index kept;
    for (size_t d = 0; d < x.shape.size(); ++d) {
      if (!reduced[d]) kept.push_back(it.index()[d]);
    }
    groups[broadcast_offset(kept_shape, kept)].push_back(x.values[flat]);
  }
  HostArray out{out_shape, {}};
  for (const Values& group : groups) out.values.push_back(f(group));
  return out;
}

// Calls f(T{}) with T the C++ type of dtype.
template <typename F>
decltype(auto) with_cpp_type(DType dtype, F&& f) {
  switch (dtype) {
    case DType::kBool:
      return f(bool{});
    case DType::kInt32:
      return f(int32_t{});
    case DType::kInt64:
      return f(int64_t{});
    case DType::kFloat32:
      return f(float{});
    case DType::kFloat64:
      break;
    case DType::kBFloat16:
    case DType::kFloat16:
      // Storage types without arithmetic: a reference of them is made in
      // float32 and cast (tests/python/test_half_float.py).
      throw std::invalid_argument("reference.h: no C++ arithmetic type for the 16-bit floats");
  }
  return f(double{});
}

// What the value becomes when stored in dtype: float32 rounds, bool is != 0.
// (Integer references are already whole numbers.)
inline double round_to(DType dtype, double value) {
  if (dtype == DType::kFloat32) {
    // Past float's range the cast is undefined; IEEE rounding gives infinity.
    if (std::isfinite(value) && std::abs(value) > std::numeric_limits<float>::max()) {
      return std::copysign(std::numeric_limits<double>::infinity(), value);
    }
    return static_cast<float>(value);
  }
  if (dtype == DType::kBool) return value != 0;
  return value;
}

inline Tensor to_tensor(const HostArray& x, DType dtype) {
  return with_cpp_type(dtype, [&]<typename T>(T) {
    std::vector<T> values;
    for (double v : x.values) values.push_back(static_cast<T>(v));
    return from_vector<T>(values, x.shape);
  });
}

inline HostArray read(const Tensor& t) {
  return with_cpp_type(t.dtype(), [&]<typename T>(T) {
    const std::vector<T> values = t.to_vector<T>();
    return HostArray{t.shape(), Values(values.begin(), values.end())};
  });
}

enum class Domain { kAny, kPositive, kNonNegative };

// Deterministic test data of the dtype: bools mixed, integers in [-4, 4],
// floats multiples of 3/8 in [-2.25, 2.25] (exact in float32, with ties and
// non-integers). salt gives another sequence; domain restricts the sign.
inline HostArray sample(const Shape& shape, DType dtype, int salt = 0,
                        Domain domain = Domain::kAny) {
  HostArray x{shape, {}};
  for (int64_t i = 0; i < shape_numel(shape); ++i) {
    const int64_t k = i * 7 + salt * 5;
    double v = dtype == DType::kBool ? (k % 3 != 0)
               : is_integral(dtype)  ? static_cast<double>(k % 9 - 4)
                                     : static_cast<double>(k % 13 - 6) * 0.375;
    if (domain != Domain::kAny) v = std::abs(v);
    if (domain == Domain::kPositive && dtype != DType::kBool) v += is_floating(dtype) ? 0.5 : 1;
    x.values.push_back(v);
  }
  return x;
}

// Comparison slack for a result of this dtype against a double reference:
// relative, and absolute below magnitude 1. Integers and bools are exact.
inline double tolerance_for(DType dtype) {
  if (dtype == DType::kFloat32) return 4e-6;
  if (dtype == DType::kFloat64) return 1e-12;
  return 0;
}

// NaN matches NaN, infinities match exactly, anything else within tol.
inline bool close_enough(double got, double want, double tol) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  return std::abs(got - want) <= tol * std::max(1.0, std::abs(want));
}

// The one comparison every op test uses: dtype, shape, then every value.
inline void expect_close(const Tensor& actual, DType dtype, const HostArray& expected) {
  ASSERT_EQ(actual.dtype(), dtype);
  ASSERT_EQ(shape_to_string(actual.shape()), shape_to_string(expected.shape));
  const Values got = read(actual).values;
  ASSERT_EQ(got.size(), expected.values.size()) << "the reference has the wrong element count";
  const double tol = tolerance_for(dtype);
  std::ostringstream mismatches;
  int count = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double want = round_to(dtype, expected.values[i]);
    if (!close_enough(got[i], want, tol) && ++count <= 5) {
      mismatches << "\n  element " << i << ": got " << got[i] << ", want " << want;
    }
  }
  EXPECT_EQ(count, 0) << "elements differ from the reference:" << mismatches.str();
}

// How a test reads its results. Each must give the reference's values.
enum class ReadMode {
  kDirect,          // read each result as soon as expect() sees it
  kAfterMarkStep,   // mark_step() once, then read everything
  kRandomSchedule,  // the same under ScheduleMode::kRandom
};

struct ReadConfig {
  ReadMode mode;
  uint64_t seed;
  const char* name;
};

inline auto all_read_modes() {
  return ::testing::Values(ReadConfig{ReadMode::kDirect, 0, "Direct"},
                           ReadConfig{ReadMode::kAfterMarkStep, 0, "AfterMarkStep"},
                           ReadConfig{ReadMode::kRandomSchedule, 1, "RandomSchedule1"},
                           ReadConfig{ReadMode::kRandomSchedule, 2, "RandomSchedule2"});
}

inline void PrintTo(const ReadConfig& config, std::ostream* out) { *out << config.name; }

inline std::string read_mode_name(const ::testing::TestParamInfo<ReadConfig>& info) {
  return info.param.name;
}

// A one-device runtime per test, run once per ReadConfig:
//   INSTANTIATE_TEST_SUITE_P(ReadModes, MyOpsTest, all_read_modes(), read_mode_name);
class OpsTest : public OneDeviceTest, public ::testing::WithParamInterface<ReadConfig> {
 protected:
  void SetUp() override {
    OneDeviceTest::SetUp();
    if (GetParam().mode == ReadMode::kRandomSchedule) {
      set_schedule(0, {ScheduleMode::kRandom, GetParam().seed});
    }
  }

  void TearDown() override {
    EXPECT_TRUE(deferred_.empty()) << "the test did not call verify()";
    OneDeviceTest::TearDown();
  }

  // Checks that actual equals expected (see expect_close), now or in verify().
  void expect(std::string what, const Tensor& actual, DType dtype, HostArray expected,
              std::source_location where = std::source_location::current()) {
    Check check{std::move(what), actual, dtype, std::move(expected), where};
    if (GetParam().mode == ReadMode::kDirect) {
      run(check);
    } else {
      deferred_.push_back(std::move(check));
    }
  }

  // Compares every deferred result: after one mark_step() of everything, or
  // under the random schedule.
  void verify() {
    if (GetParam().mode != ReadMode::kDirect) mark_step();
    for (const Check& check : deferred_) run(check);
    deferred_.clear();
  }

 private:
  struct Check {
    std::string what;
    Tensor actual;
    DType dtype;
    HostArray expected;
    std::source_location where;  // of the expect() call
  };

  static void run(const Check& check) {
    const ::testing::ScopedTrace trace(check.where.file_name(),
                                       static_cast<int>(check.where.line()), check.what);
    expect_close(check.actual, check.dtype, check.expected);
  }

  std::vector<Check> deferred_;
};

// Checks calls that must throw when they are made, before anything runs:
// each must leave the pending graph as it was and compile nothing.
//   RejectedCalls rejected;
//   rejected.invalid("do not broadcast", [&] { return add(a, b); });
class RejectedCalls {
 public:
  RejectedCalls()
      : pending_before_(dump_pending_graph()), compiled_before_(compile_cache_stats().misses) {}

  // InvalidArgument but not DTypeError; the message contains message_part.
  void invalid(std::string_view message_part, const std::function<Tensor()>& call,
               std::source_location where = std::source_location::current()) {
    check(false, message_part, call, where);
  }

  // DTypeError; the message contains message_part.
  void dtype(std::string_view message_part, const std::function<Tensor()>& call,
             std::source_location where = std::source_location::current()) {
    check(true, message_part, call, where);
  }

 private:
  void check(bool dtype_error, std::string_view message_part, const std::function<Tensor()>& call,
             const std::source_location& where) {
    const ::testing::ScopedTrace trace(where.file_name(), static_cast<int>(where.line()),
                                       "this call must be rejected");
    try {
      const Tensor result = call();
      ADD_FAILURE() << "no error was thrown; the result is " << dtype_name(result.dtype())
                    << shape_to_string(result.shape());
    } catch (const InvalidArgument& e) {
      EXPECT_EQ(dynamic_cast<const DTypeError*>(&e) != nullptr, dtype_error)
          << (dtype_error ? "expected a DTypeError, got: " : "unexpected DTypeError: ") << e.what();
      EXPECT_NE(std::string_view(e.what()).find(message_part), std::string_view::npos)
          << "\"" << e.what() << "\" does not mention \"" << message_part << "\"";
    }
    EXPECT_EQ(dump_pending_graph(), pending_before_) << "the failed call recorded something";
    EXPECT_EQ(compile_cache_stats().misses, compiled_before_) << "the failed call ran a graph";
  }

  std::string pending_before_;
  int64_t compiled_before_;
};

// What results() computes on a fresh one-device runtime with
// ORDO_KERNEL_THREADS=threads; the runtime is restarted without it after.
template <typename F>
std::vector<Values> with_kernel_threads(const char* threads, F results) {
  shutdown();
  setenv("ORDO_KERNEL_THREADS", threads, 1);
  init(1);
  std::vector<Values> values = results();
  shutdown();
  unsetenv("ORDO_KERNEL_THREADS");
  init(1);
  return values;
}

// Every value of one bitwise equal to the other's (doubles hold float32
// results exactly: equal doubles are equal bits).
inline void expect_same_bits(const std::vector<Values>& one, const std::vector<Values>& two) {
  ASSERT_EQ(one.size(), two.size());
  for (size_t r = 0; r < one.size(); ++r) {
    ASSERT_EQ(one[r].size(), two[r].size());
    for (size_t i = 0; i < one[r].size(); ++i) {
      ASSERT_EQ(std::bit_cast<uint64_t>(one[r][i]), std::bit_cast<uint64_t>(two[r][i]))
          << "result " << r << " element " << i;
    }
  }
}

// "[2, 3] float32": names a case in failure messages.
inline std::string describe(const Shape& shape, DType dtype) {
  return shape_to_string(shape) + " " + std::string(dtype_name(dtype));
}

}  // namespace testing
}  // namespace ordo
