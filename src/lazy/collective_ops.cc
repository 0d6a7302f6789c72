// Builders of collectives: argument checks (all before anything is
// recorded, so a bad call leaves the token slot as it was), output types,
// and the token chain.
#include <algorithm>
#include <atomic>
#include <cmath>

#include "core/source_location.h"
#include "ir/op_attrs.h"
#include "lazy/shape_inference.h"
#include "lazy/trace.h"
#include "ordo/collectives.h"
#include "runtime/runtime.h"

namespace ordo {
namespace {

using ir::OpKind;

std::atomic<bool> g_token_edges{true};

// Groups must partition the world; equal sizes where the op splits or
// gathers by the group size.
void check_groups(std::string_view what, const ReplicaGroups& groups, int world,
                  bool equal_sizes) {
  if (groups.empty()) return;
  std::vector<int> seen(static_cast<size_t>(world), 0);
  for (const auto& group : groups) {
    ORDO_ARG_CHECK(!group.empty(), what, ": a replica group is empty");
    ORDO_ARG_CHECK(!equal_sizes || group.size() == groups[0].size(), what,
                   ": replica groups must all have the same size, got ", groups[0].size(),
                   " and ", group.size());
    for (int member : group) {
      ORDO_ARG_CHECK(member >= 0 && member < world, what, ": device ", member,
                     " in a replica group does not exist (world size ", world, ")");
      ORDO_ARG_CHECK(++seen[member] == 1, what, ": device ", member,
                     " is in more than one replica group");
    }
  }
  for (int d = 0; d < world; ++d) {
    ORDO_ARG_CHECK(seen[d] == 1, what, ": device ", d,
                   " is in no replica group; groups must partition the devices");
  }
}

void check_reduce(std::string_view what, ReduceType reduce, DType dtype, double scale) {
  const bool bitwise = reduce == ReduceType::kAnd || reduce == ReduceType::kOr;
  ORDO_DTYPE_CHECK(!bitwise || !is_floating(dtype), what, ": reduce type '",
                   reduce_type_name(reduce), "' needs bool or integer tensors, got ",
                   dtype_name(dtype));
  ORDO_DTYPE_CHECK(bitwise || dtype != DType::kBool, what, ": reduce type '",
                   reduce_type_name(reduce), "' is not defined for bool tensors");
  ORDO_ARG_CHECK(std::isfinite(scale), what, ": scale must be finite, got ", scale);
  ORDO_ARG_CHECK(!bitwise || scale == 1.0, what, ": scale applies to sum, mul, min and max, not '",
                 reduce_type_name(reduce), "'");
}

struct Traced {
  int world;
  size_t group_size;  // of the calling device's group
  ReplicaGroups groups;  // canonical: what the node records
};

// Checks the inputs and groups; returns where the collective runs.
Traced prepare(std::string_view what, std::span<const Tensor* const> inputs,
               const ReplicaGroups& groups, bool equal_sizes) {
  ORDO_ARG_CHECK(!inputs.empty(), what, ": no tensors given");
  const LocalDevice device = lazy::common_device(what, inputs);
  const runtime::Runtime& rt = runtime::get();
  const int ordinal = rt.ordinal_of(device).value();  // groups name global ordinals, as data
  const int world = rt.topology().world_size();
  check_groups(what, groups, world, equal_sizes);
  size_t group_size = static_cast<size_t>(world);
  for (const auto& group : groups) {
    if (std::find(group.begin(), group.end(), ordinal) != group.end()) group_size = group.size();
  }
  return {world, group_size, ir::canonical_partition(groups, world)};
}

lazy::Tensors record(OpKind op, std::span<const Tensor* const> inputs, ir::ValueTypes outputs,
                     ir::CollectiveAttrs attrs) {
  attrs.token_operand = g_token_edges.load(std::memory_order_relaxed);
  outputs.push_back(ir::ValueType::token());
  return lazy::trace(op, inputs, std::move(outputs), ir::encode(op, attrs), attrs.token_operand);
}

std::vector<const Tensor*> pointers(const std::vector<Tensor>& tensors) {
  std::vector<const Tensor*> out;
  for (const Tensor& t : tensors) out.push_back(&t);
  return out;
}

// XLA's rule: each device is the source of at most one pair and the
// target of at most one.
void check_pairs(const std::vector<std::pair<int, int>>& pairs, int world) {
  constexpr size_t kNone = ~size_t{0};
  std::vector<size_t> pair_from(static_cast<size_t>(world), kNone);  // by source
  std::vector<size_t> pair_to(static_cast<size_t>(world), kNone);    // by target
  auto pair_text = [&pairs](size_t i) {
    return str_cat("[", pairs[i].first, ", ", pairs[i].second, "]");
  };
  for (size_t i = 0; i < pairs.size(); ++i) {
    const auto [source, target] = pairs[i];
    ORDO_ARG_CHECK(source >= 0 && source < world && target >= 0 && target < world,
                   "collective_permute: pair ", pair_text(i), " is out of range for world size ", world);
    ORDO_ARG_CHECK(pair_from[source] == kNone, "collective_permute: device ", source,
                   " is the source of more than one pair: ", pair_text(pair_from[source]), " and ",
                   pair_text(i));
    ORDO_ARG_CHECK(pair_to[target] == kNone, "collective_permute: device ", target,
                   " is the target of more than one pair: ", pair_text(pair_to[target]), " and ",
                   pair_text(i));
    pair_from[source] = i;
    pair_to[target] = i;
  }
}

// A dimension of x that splits into `parts` equal pieces.
int64_t splittable_dim(std::string_view what, const Tensor& x, int64_t dim, int64_t parts,
                       std::string_view name) {
  const int64_t d = lazy::normalize_axis(what, dim, x.dim());
  ORDO_ARG_CHECK(x.shape()[d] % parts == 0, what, ": ", name, " ", d, " of shape ",
                 shape_to_string(x.shape()), " does not split into ", parts, " equal parts");
  return d;
}

// Dimension dim of a collective's result: the input's size there times the
// group size, which int64 must hold.
int64_t gathered_dim(std::string_view what, const Tensor& x, int64_t dim, int64_t parts) {
  int64_t size = 0;
  ORDO_ARG_CHECK(!__builtin_mul_overflow(x.shape()[dim], parts, &size), what, ": dimension ", dim,
                 " of the result would be ", x.shape()[dim], " (of shape ", shape_to_string(x.shape()),
                 ") times the group size ", parts, ", more than int64 can hold (", INT64_MAX, ")");
  return size;
}

}  // namespace

ReduceType parse_reduce_type(std::string_view name) {
  for (ReduceType t : {ReduceType::kSum, ReduceType::kMul, ReduceType::kAnd, ReduceType::kOr,
                       ReduceType::kMin, ReduceType::kMax}) {
    if (reduce_type_name(t) == name) return t;
  }
  throw_error<InvalidArgument>("unknown reduce type '", name,
                               "'; expected one of sum, mul, and, or, min, max");
}

std::string_view reduce_type_name(ReduceType type) {
  switch (type) {
    case ReduceType::kSum: return "sum";
    case ReduceType::kMul: return "mul";
    case ReduceType::kAnd: return "and";
    case ReduceType::kOr: return "or";
    case ReduceType::kMin: return "min";
    case ReduceType::kMax: return "max";
  }
  return "unknown";
}

namespace {

lazy::Tensors all_reduce_of(ReduceType reduce, std::span<const Tensor* const> inputs, double scale,
                            const ReplicaGroups& groups) {
  Traced at = prepare("all_reduce", inputs, groups, false);
  ir::ValueTypes outputs;
  outputs.reserve(inputs.size() + 1);  // and the token's
  for (const Tensor* t : inputs) {
    check_reduce("all_reduce", reduce, t->dtype(), scale);
    outputs.push_back({t->dtype(), t->shape()});
  }
  ir::CollectiveAttrs attrs;
  attrs.reduce = reduce;
  attrs.scale = scale;
  attrs.groups = std::move(at.groups);
  return record(OpKind::kAllReduce, inputs, std::move(outputs), std::move(attrs));
}

}  // namespace

std::vector<Tensor> all_reduce_list(ReduceType reduce, const std::vector<Tensor>& inputs,
                                    double scale, const ReplicaGroups& groups) {
  const lazy::Tensors results = all_reduce_of(reduce, pointers(inputs), scale, groups);
  return {results.begin(), results.end()};
}

Tensor all_reduce(ReduceType reduce, const Tensor& input, double scale, const ReplicaGroups& groups, Caller caller) {
  const ScopedUserLocation here(caller);
  const Tensor* in[] = {&input};
  return std::move(all_reduce_of(reduce, in, scale, groups).front());
}

void all_reduce_inplace(ReduceType reduce, std::vector<Tensor>& inputs, double scale,
                        const ReplicaGroups& groups, Caller caller) {
  const ScopedUserLocation here(caller);
  std::vector<Tensor> results = all_reduce_list(reduce, inputs, scale, groups);
  for (size_t i = 0; i < inputs.size(); ++i) inputs[i].assign(results[i]);
}

Tensor all_gather(const Tensor& input, int64_t dim, const ReplicaGroups& groups, Caller caller) {
  const ScopedUserLocation here(caller);
  const Tensor* in[] = {&input};
  Traced at = prepare("all_gather", in, groups, true);
  ORDO_ARG_CHECK(input.dim() >= 1, "all_gather: the input must have rank >= 1");
  ir::CollectiveAttrs attrs;
  attrs.dim = lazy::normalize_axis("all_gather", dim, input.dim());
  attrs.groups = std::move(at.groups);
  Shape shape = input.shape();
  shape[attrs.dim] = gathered_dim("all_gather", input, attrs.dim, static_cast<int64_t>(at.group_size));
  return record(OpKind::kAllGather, in, {{input.dtype(), std::move(shape)}}, std::move(attrs)).front();
}

Tensor reduce_scatter(ReduceType reduce, const Tensor& input, double scale, int64_t scatter_dim,
                      int64_t shard_count, const ReplicaGroups& groups, Caller caller) {
  const ScopedUserLocation here(caller);
  const Tensor* in[] = {&input};
  Traced at = prepare("reduce_scatter", in, groups, true);
  check_reduce("reduce_scatter", reduce, input.dtype(), scale);
  ORDO_ARG_CHECK(input.dim() >= 1, "reduce_scatter: the input must have rank >= 1");
  ORDO_ARG_CHECK(shard_count == static_cast<int64_t>(at.group_size),
                 "reduce_scatter: shard_count ", shard_count, " must equal the group size ",
                 at.group_size);
  ir::CollectiveAttrs attrs;
  attrs.reduce = reduce;
  attrs.scale = scale;
  attrs.dim = splittable_dim("reduce_scatter", input, scatter_dim, shard_count, "scatter_dim");
  attrs.groups = std::move(at.groups);
  Shape shape = input.shape();
  shape[attrs.dim] /= shard_count;
  return record(OpKind::kReduceScatter, in, {{input.dtype(), std::move(shape)}}, std::move(attrs)).front();
}

Tensor all_to_all(const Tensor& input, int64_t split_dimension, int64_t concat_dimension,
                  int64_t split_count, const ReplicaGroups& groups, Caller caller) {
  const ScopedUserLocation here(caller);
  const Tensor* in[] = {&input};
  Traced at = prepare("all_to_all", in, groups, true);
  ORDO_ARG_CHECK(input.dim() >= 1, "all_to_all: the input must have rank >= 1");
  ORDO_ARG_CHECK(split_count == static_cast<int64_t>(at.group_size), "all_to_all: split_count ",
                 split_count, " must equal the group size ", at.group_size);
  ir::CollectiveAttrs attrs;
  attrs.dim = splittable_dim("all_to_all", input, split_dimension, split_count, "split_dimension");
  attrs.concat_dim = lazy::normalize_axis("all_to_all", concat_dimension, input.dim());
  attrs.groups = std::move(at.groups);
  Shape shape = input.shape();
  shape[attrs.dim] /= split_count;
  // Splitting a 0 leaves the count at 0 while this dimension still grows.
  shape[attrs.concat_dim] = attrs.dim == attrs.concat_dim ? input.shape()[attrs.concat_dim]
                                               : gathered_dim("all_to_all", input, attrs.concat_dim, split_count);
  return record(OpKind::kAllToAll, in, {{input.dtype(), std::move(shape)}}, std::move(attrs)).front();
}

Tensor collective_permute(const Tensor& input, const std::vector<std::pair<int, int>>& pairs, Caller caller) {
  const ScopedUserLocation here(caller);
  const Tensor* in[] = {&input};
  const Traced at = prepare("collective_permute", in, {}, false);
  check_pairs(pairs, at.world);
  ir::CollectiveAttrs attrs;
  attrs.pairs = pairs;
  // The same pairs in another order are the same permutation (sources are
  // distinct): sorted, they hash and compare the same.
  std::sort(attrs.pairs.begin(), attrs.pairs.end());
  return record(OpKind::kCollectivePermute, in, {{input.dtype(), input.shape()}}, std::move(attrs)).front();
}

void collective_broadcast(std::vector<Tensor>& tensors, int root_ordinal, const ReplicaGroups& groups,
                          Caller caller) {
  const ScopedUserLocation here(caller);
  const std::vector<const Tensor*> in = pointers(tensors);
  Traced at = prepare("collective_broadcast", in, groups, false);
  ORDO_ARG_CHECK(root_ordinal >= 0 && root_ordinal < at.world, "collective_broadcast: root ",
                 root_ordinal, " does not exist (world size ", at.world, ")");
  ir::ValueTypes outputs;
  for (const Tensor& t : tensors) outputs.push_back({t.dtype(), t.shape()});
  ir::CollectiveAttrs attrs;
  attrs.root = root_ordinal;
  attrs.groups = std::move(at.groups);
  const lazy::Tensors results = record(OpKind::kCollectiveBroadcast, in, std::move(outputs), std::move(attrs));
  for (size_t i = 0; i < tensors.size(); ++i) tensors[i].assign(results[i]);
}

void set_token_edges_enabled(bool enabled) { g_token_edges.store(enabled); }
bool token_edges_enabled() { return g_token_edges.load(); }

}  // namespace ordo
