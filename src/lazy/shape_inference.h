// Shape rules shared by the op builders. Each throws InvalidArgument with the
// op's name (`what`) when the arguments do not fit.
#pragma once

#include <string_view>
#include <vector>

#include "ordo/dtype.h"

namespace ordo::lazy {

// numpy broadcasting of two shapes.
Shape broadcast_shapes(std::string_view what, const Shape& a, const Shape& b);
// An axis in [-rank, rank) made non-negative.
int64_t normalize_axis(std::string_view what, int64_t axis, int64_t rank);
// Axes made non-negative, sorted, checked for repeats; empty means all.
std::vector<int64_t> normalize_axes(std::string_view what, const std::vector<int64_t>& axes,
                                    int64_t rank);
// The shape left after reducing axes (kept as 1s with keepdim).
Shape reduced_shape(const Shape& shape, const std::vector<int64_t>& axes, bool keepdim);

}  // namespace ordo::lazy
