#include "lazy/shape_inference.h"

#include <algorithm>

#include "ordo/error.h"

namespace ordo::lazy {

Shape broadcast_shapes(std::string_view what, const Shape& a, const Shape& b) {
  if (a == b) return a;
  const size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    ORDO_ARG_CHECK(da == db || da == 1 || db == 1, what, ": shapes ", shape_to_string(a), " and ",
                   shape_to_string(b), " do not broadcast");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

int64_t normalize_axis(std::string_view what, int64_t axis, int64_t rank) {
  ORDO_ARG_CHECK(axis >= -rank && axis < rank, what, ": axis ", axis,
                 " is out of range for a tensor of rank ", rank);
  return axis < 0 ? axis + rank : axis;
}

std::vector<int64_t> normalize_axes(std::string_view what, const std::vector<int64_t>& axes,
                                    int64_t rank) {
  std::vector<int64_t> out;
  if (axes.empty()) {
    for (int64_t i = 0; i < rank; ++i) out.push_back(i);
    return out;
  }
  for (int64_t axis : axes) out.push_back(normalize_axis(what, axis, rank));
  std::sort(out.begin(), out.end());
  ORDO_ARG_CHECK(std::adjacent_find(out.begin(), out.end()) == out.end(), what,
                 ": an axis is repeated in ", shape_to_string(axes));
  return out;
}

Shape reduced_shape(const Shape& shape, const std::vector<int64_t>& axes, bool keepdim) {
  Shape out;
  for (int64_t i = 0; i < static_cast<int64_t>(shape.size()); ++i) {
    const bool reduced = std::binary_search(axes.begin(), axes.end(), i);
    if (!reduced) {
      out.push_back(shape[i]);
    } else if (keepdim) {
      out.push_back(1);
    }
  }
  return out;
}

}  // namespace ordo::lazy
