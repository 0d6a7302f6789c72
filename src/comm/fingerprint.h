// What a participant brings to a collective, by value: op, attributes and
// input types. Peers compare fingerprints instead of reading each other's
// calls, because a peer that is done may already have returned and freed
// its call; a fingerprint lives in the channel until its slot is reused.
//
//   Fingerprint mine;
//   mine.assign(call);
//   if (mine != theirs) throw CollectiveMismatchError(mismatch_message(...));
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "comm/communicator.h"

namespace ordo::comm {

class Fingerprint {
 public:
  // Everything two calls must agree on: the op, its reduce type, scale,
  // dims, all replica groups and pairs, and the dtype and shape of every
  // input, and where it was traced when IR debug recorded it. Reuses its memory: no allocation for common ops.
  void assign(const CollectiveCall& call);

  bool operator==(const Fingerprint& other) const;

  // What a backend sends its peers when they share no memory: equal
  // fingerprints have equal words.
  std::span<const int64_t> words() const { return {data(), size_}; }

 private:
  const int64_t* data() const { return spilled_ ? spill_.data() : inline_.data(); }

  // Enough for an op with a few inputs of small rank and no groups.
  static constexpr size_t kInlineWords = 24;
  size_t size_ = 0;
  bool spilled_ = false;  // the words are all in spill_ (inline_ holds the first ones)
  std::array<int64_t, kInlineWords> inline_{};
  std::vector<int64_t> spill_;
};

// What every member of group raises when device and other_device brought
// different ops to the group's collective #sequence: "collective mismatch
// at #3 on group [0, 1]: device 0 runs <call> but device 1 runs <other>".
std::string mismatch_message(int64_t sequence, const std::vector<int>& group, GlobalOrdinal device,
                             const CollectiveCall& call, GlobalOrdinal other_device, const CollectiveCall& other_call);
// The same from what the two devices are ("device 2 (process 1 on host vm)")
// and their calls' descriptions, for peers that hold no CollectiveCall of
// each other's (other processes).
std::string mismatch_message(int64_t sequence, const std::vector<int>& group, const std::string& who,
                             const std::string& call, const std::string& other_who, const std::string& other_call);

// What device raises when other_device, which it waits for in its
// collective #number, is in a collective of other replica groups: "collective
// mismatch at collective #4 of devices 0 and 1: device 0 runs <mine>, but
// device 1 runs <theirs>: replica groups <my groups> against <their groups>".
std::string partition_mismatch_message(int64_t number, GlobalOrdinal device, const std::string& mine,
                                       GlobalOrdinal other_device, const std::string& theirs,
                                       const std::string& my_groups, const std::string& their_groups);

}  // namespace ordo::comm
