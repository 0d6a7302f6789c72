#include "ir/conv_attrs.h"

#include "core/check.h"

namespace ordo::ir {

Attrs ConvAttrs::encode() const {
  Attrs attrs;
  attrs.ints.push_back(groups);
  for (const ConvDim& dim : dims) {
    attrs.ints.insert(attrs.ints.end(), {dim.stride, dim.pad_begin, dim.pad_end, dim.dilation});
  }
  return attrs;
}

ConvAttrs ConvAttrs::decode(const Attrs& attrs) {
  ORDO_CHECK(!attrs.ints.empty() && attrs.ints.size() % 4 == 1, ": a convolution's attrs hold ", attrs.ints.size(),
             " ints");
  ConvAttrs conv;
  conv.groups = attrs.ints[0];
  for (size_t i = 1; i < attrs.ints.size(); i += 4) {
    conv.dims.push_back({attrs.ints[i], attrs.ints[i + 1], attrs.ints[i + 2], attrs.ints[i + 3]});
  }
  return conv;
}

}  // namespace ordo::ir
