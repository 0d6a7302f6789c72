// Collectives, with the semantics of torch_xla's xla_model (2.1). Each is a
// graph node that takes its device's cc token and leaves a new one, so the
// collectives of a device run in program order whatever the scheduler does.
//
//   // on each of 4 devices (threads), with that device current:
//   ordo::Tensor g = ordo::full({8}, float(ordo::current_device()), ordo::DType::kFloat32);
//   ordo::Tensor total = ordo::all_reduce(ordo::ReduceType::kSum, g);       // 0+1+2+3
//   ordo::Tensor parts = ordo::all_gather(g, 0, {{0, 1}, {2, 3}});          // [16]
//   ordo::mark_step();
//
// Arguments are checked when the op is traced (InvalidArgument, nothing
// recorded, the token left as it was). At run time a participant that brings
// another op raises CollectiveMismatchError on every participant; devices
// whose k-th collectives have different replica groups raise it wherever one
// waits for another; one that waits too long warns, then raises
// CollectiveTimeoutError; a peer whose graph failed or that was marked failed
// makes the others raise CollectiveError.
//
// `where` is the caller's line, recorded on the node when IR debug is on
// (ordo/ir_debug.h); leave it to its default. The collectives' types
// (ReduceType, ReplicaGroups, CollectiveTimeouts) are in
// ordo/collective_types.h.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ordo/collective_types.h"
#include "ordo/tensor.h"

namespace ordo {

// One tensor: a new tensor holding the scaled reduction over the group.
Tensor all_reduce(ReduceType reduce, const Tensor& input, double scale = 1.0,
                  const ReplicaGroups& groups = {}, Caller caller = Caller::current());
// A list: reduced in place (each handle rebound) as one coalesced collective.
void all_reduce_inplace(ReduceType reduce, std::vector<Tensor>& inputs, double scale = 1.0,
                        const ReplicaGroups& groups = {}, Caller caller = Caller::current());
// Concatenates the group's inputs along dim, in rank order.
Tensor all_gather(const Tensor& input, int64_t dim = 0, const ReplicaGroups& groups = {},
                  Caller caller = Caller::current());
// Rank r gets shard r (along scatter_dim) of the scaled reduction;
// shard_count must equal the group size.
Tensor reduce_scatter(ReduceType reduce, const Tensor& input, double scale, int64_t scatter_dim,
                      int64_t shard_count, const ReplicaGroups& groups = {}, Caller caller = Caller::current());
// Splits along split_dimension into split_count chunks (the group size),
// sends chunk j to rank j, and concatenates what arrives along
// concat_dimension in rank order.
Tensor all_to_all(const Tensor& input, int64_t split_dimension, int64_t concat_dimension,
                  int64_t split_count, const ReplicaGroups& groups = {}, Caller caller = Caller::current());
// pairs of [source, target] global ordinals, each device the source of one
// pair at most and the target of one at most, in any order; a device that
// is no target gets zeros.
Tensor collective_permute(const Tensor& input, const std::vector<std::pair<int, int>>& pairs,
                          Caller caller = Caller::current());
// In place: every device of a group gets the root's tensors (root_ordinal is
// a global ordinal); a group without the root gets zeros, as in torch_xla.
void collective_broadcast(std::vector<Tensor>& tensors, int root_ordinal = 0,
                          const ReplicaGroups& groups = {}, Caller caller = Caller::current());

// ---- The host-side exchange. ----

// Meets the calling thread's device's peers outside any graph (torch_xla's
// rendezvous): every participant (the replicas, global ordinals in any
// order; none: every device) calls it with the same tag, and each gets
// every participant's payload, in ordinal order. Payloads may differ in
// length, and be empty. It runs beside the device's queued graphs, not
// after them. Like a collective, it does not hang: participants that wait
// for each other in different rounds (another tag or replicas) raise
// CollectiveMismatchError; a wait past the collective timeout warns, then
// raises CollectiveTimeoutError; a participant that has not arrived and is
// marked failed or absent, or an interrupt of a waiting participant
// (interrupt_device, or the thread's own check), fails it with
// CollectiveError. A device not among the replicas, or replicas that are
// not distinct devices, raise InvalidArgument, and nothing is left behind.
// on_warning takes the warning line instead of the log (ordo/log.h).
//
//   std::vector<std::string> all = ordo::rendezvous("step done", "loss 0.25");
std::vector<std::string> rendezvous(std::string_view tag, std::string_view payload = {},
                                    const std::vector<int>& replicas = {},
                                    const std::function<void(const std::string& line)>& on_warning = {});

// ---- The cc token of each device. ----

// A handle to a device's token: an IR value of token type.
class CcToken {
 public:
  CcToken() = default;
  bool defined() const { return impl_ != nullptr; }
  int device() const;
  struct Impl;
  explicit CcToken(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  const std::shared_ptr<const Impl>& impl() const { return impl_; }

 private:
  std::shared_ptr<const Impl> impl_;
};

// The device's current token; undefined when the slot is fresh.
CcToken get_cc_token(int device);
// Sets the slot; an undefined token resets it. A token of another device is
// an error; a token whose graph already ran (or was dropped, or was read in
// a runtime since shut down) counts as fresh.
void set_cc_token(int device, const CcToken& token);
void reset_cc_token(int device);

// Debug switch: without token edges collectives are ordered by nothing but
// data, so a scheduler may reorder them (the mismatch check catches it).
void set_token_edges_enabled(bool enabled);
bool token_edges_enabled();

// ---- Failure handling. ----

// The collective timeouts: ordo/collective_types.h.

// Declares a device gone (its driving thread died): every collective that
// waits for it, now or later, fails with CollectiveError naming it.
void mark_device_failed(int device, const std::string& reason);

// Declares a device absent: nothing drives it for now (spawn does this when
// a device's function returns). Once the device's worker has run what is
// queued on it, every collective that needs it and that it has not joined
// fails with CollectiveError naming it, until clear_device_absent(device),
// which takes effect at once and also cancels a mark still queued.
void mark_device_absent(int device, const std::string& reason);
void clear_device_absent(int device);

// Interrupts what device has queued so far (Python's Ctrl-C does this for
// the devices its main thread waits for): each of its collectives that
// waits, for its peers or for its slot, fails at once with CollectiveError
// naming reason, on the device and on every peer of that collective; the
// rest of its work runs as usual, and graphs queued later are not affected.
void interrupt_device(int device, const std::string& reason);

}  // namespace ordo
