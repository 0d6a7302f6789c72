// The C++ face of each device's cc token slot (lazy::DeviceGraph::cc_token).
#include "lazy/graph_table.h"
#include "ordo/collectives.h"

namespace ordo {

struct CcToken::Impl {
  ir::Value value;
  LocalDevice device;
  // Where the token was read: a token of an earlier runtime, or of an
  // earlier cut of this one, belongs to a graph that ran or was dropped.
  uint64_t generation;
  uint64_t cut;
};

int CcToken::device() const {
  ORDO_ARG_CHECK(impl_ != nullptr, "the cc token is undefined (a fresh slot)");
  return impl_->device.index();
}

CcToken get_cc_token(int local_device) {
  lazy::GraphTable& graphs = lazy::graphs();
  const LocalDevice device = graphs.runtime().checked_device(local_device);
  lazy::DeviceGraph& graph = graphs.graph(device);
  std::lock_guard<std::mutex> lock(graph.mu);
  if (!graph.cc_token.node) return CcToken();
  return CcToken(std::make_shared<const CcToken::Impl>(
      CcToken::Impl{graph.cc_token, device, graphs.generation(), graph.cuts}));
}

void set_cc_token(int local_device, const CcToken& token) {
  lazy::GraphTable& graphs = lazy::graphs();
  const LocalDevice device = graphs.runtime().checked_device(local_device);
  ORDO_ARG_CHECK(!token.defined() || token.impl()->device == device, "set_cc_token: a token of device ",
                 token.defined() ? token.device() : -1, " cannot be the token of device ", device);
  lazy::DeviceGraph& graph = graphs.graph(device);
  std::lock_guard<std::mutex> lock(graph.mu);
  // A token whose graph already ran counts as fresh.
  const bool current =
      token.defined() && token.impl()->generation == graphs.generation() && token.impl()->cut == graph.cuts;
  graph.cc_token = current ? token.impl()->value : ir::Value{};
}

void reset_cc_token(int device) { set_cc_token(device, CcToken()); }

}  // namespace ordo
