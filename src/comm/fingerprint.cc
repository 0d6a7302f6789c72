#include "comm/fingerprint.h"

#include <algorithm>
#include <bit>

#include "ordo/error.h"

namespace ordo::comm {

// Every list is preceded by its length, so equal words mean equal fields.
void Fingerprint::assign(const CollectiveCall& call) {
  if (!spill_.empty()) spill_.clear();  // rare: long ops only
  size_t at = 0;
  // A word is written only when it changes: peers read this fingerprint at
  // every collective, and a line left unwritten stays valid in their
  // caches, so the usual case (the same op again) moves no cache line.
  // Inlined, as every collective makes its fingerprint.
  auto push = [&](int64_t word) __attribute__((always_inline)) {
    if (at < kInlineWords) {
      if (inline_[at] != word) inline_[at] = word;
    } else {
      if (at == kInlineWords) spill_.assign(inline_.begin(), inline_.end());
      spill_.push_back(word);
    }
    ++at;
  };
  const ir::CollectiveAttrs& a = call.attrs;
  push(static_cast<int64_t>(call.op));
  push(static_cast<int64_t>(a.reduce));
  // 0.0 and -0.0 scale alike, so they are one scale.
  push(a.scale == 0 ? 0 : std::bit_cast<int64_t>(a.scale));
  push(a.dim);
  push(a.concat_dim);
  push(a.root);
  push(static_cast<int64_t>(a.groups.size()));
  for (const auto& group : a.groups) {
    push(static_cast<int64_t>(group.size()));
    for (int member : group) push(member);
  }
  push(static_cast<int64_t>(a.pairs.size()));
  for (const auto& [source, target] : a.pairs) {
    push(source);
    push(target);
  }
  push(static_cast<int64_t>(call.inputs.size()));
  for (const device::Buffer* input : call.inputs) {
    push(static_cast<int64_t>(input->dtype));
    push(static_cast<int64_t>(input->shape.size()));
    for (int64_t dim : input->shape) push(dim);
  }
  // IR debug: the line that traced it, so that a device reaching this
  // collective from another line than its peers is a mismatch.
  if (a.location != nullptr) push(static_cast<int64_t>(a.location->hash));
  if (size_ != at) size_ = at;
  if (spilled_ != (at > kInlineWords)) spilled_ = at > kInlineWords;
}

bool Fingerprint::operator==(const Fingerprint& other) const {
  return size_ == other.size_ && std::equal(data(), data() + size_, other.data());
}

std::string mismatch_message(int64_t sequence, const std::vector<int>& group, GlobalOrdinal device,
                             const CollectiveCall& call, GlobalOrdinal other_device, const CollectiveCall& other_call) {
  return mismatch_message(sequence, group, str_cat("device ", device), describe(call),
                          str_cat("device ", other_device), describe(other_call));
}

std::string mismatch_message(int64_t sequence, const std::vector<int>& group, const std::string& who,
                             const std::string& call, const std::string& other_who, const std::string& other_call) {
  return str_cat("collective mismatch at #", sequence, " on group ", describe_group(group), ": ", who, " runs ", call,
                 " but ", other_who, " runs ", other_call);
}

std::string partition_mismatch_message(int64_t number, GlobalOrdinal device, const std::string& mine,
                                       GlobalOrdinal other_device, const std::string& theirs,
                                       const std::string& my_groups, const std::string& their_groups) {
  return str_cat("collective mismatch at collective #", number, " of devices ", device, " and ", other_device,
                 ": device ", device, " runs ", mine, ", but device ", other_device, " runs ", theirs,
                 ": replica groups ", my_groups, " against ", their_groups);
}

}  // namespace ordo::comm
