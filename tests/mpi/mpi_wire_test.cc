// What the MPI backend's messages carry, without MPI: the header every
// message opens with and the tag of each group's channel.
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "comm/protocol/channel_tags.h"
#include "comm/protocol/message_header.h"
#include "comm/protocol/wire.h"
#include "ordo/error.h"

namespace ordo::comm {
namespace {

TEST(MessageHeader, ReadsBackWhatWasWrittenWithThePayloadAfterIt) {
  const std::vector<int64_t> words = {3, 0, -1, int64_t{1} << 62, 7};
  const std::vector<int64_t> other = {9};
  const std::vector<MemberEntry> members = {{4, words, ""}, {5, other, "all_reduce(sum, scale 1) of float32[4]"}};
  const MessageHeader header{MessageKind::kHeader, 41, 2, members, ErrorCode::kExecution, {}, 5,
                             int64_t{1798000000} * 1000000000 + 7};
  std::string message = encode_message(header, 8);
  const DecodedMessage read = decode_message(message, "process 1");
  ASSERT_EQ(read.payload_offset % 64, 0u);
  ASSERT_EQ(message.size(), read.payload_offset + 8);
  message.replace(read.payload_offset, 8, "payload!");
  EXPECT_EQ(read.kind, MessageKind::kHeader);
  EXPECT_EQ(read.sequence, 41);
  EXPECT_EQ(read.process, 2);
  ASSERT_EQ(read.members.size(), 2u);
  EXPECT_EQ(read.members[0].device, 4);
  EXPECT_EQ(read.members[0].fingerprint, words);
  EXPECT_EQ(read.members[1].device, 5);
  EXPECT_EQ(read.members[1].fingerprint, other);
  EXPECT_EQ(read.members[1].text, "all_reduce(sum, scale 1) of float32[4]");
  EXPECT_TRUE(read.failure.empty());
  EXPECT_EQ(read.last_device, 5);
  EXPECT_EQ(read.last_arrival_wall_ns, int64_t{1798000000} * 1000000000 + 7);
  EXPECT_EQ(message.substr(read.payload_offset), "payload!");
}

TEST(MessageHeader, AFailureAndNoMembersOrPayload) {
  const MessageHeader header{MessageKind::kRetraction, 0, 0, {}, ErrorCode::kCollectiveTimeout, "device 3 waited"};
  const std::string message = encode_message(header, 0);
  const DecodedMessage read = decode_message(message, "process 0");
  EXPECT_EQ(read.kind, MessageKind::kRetraction);
  EXPECT_TRUE(read.members.empty());
  EXPECT_EQ(read.failure_code, ErrorCode::kCollectiveTimeout);
  EXPECT_EQ(read.failure, "device 3 waited");
  EXPECT_EQ(read.payload_offset, message.size());
}

void expect_malformed(const std::string& message, const std::string& why) {
  try {
    decode_message(message, "process 2 (host vm, pid 7)");
    ADD_FAILURE() << "read a header from a message that has none (" << why << ")";
  } catch (const CollectiveError& e) {
    const std::string text = e.what();
    EXPECT_NE(text.find("a message from process 2 (host vm, pid 7) is not one of ordo's collectives ("
                        + why),
              std::string::npos)
        << text;
  }
}

TEST(MessageHeader, AMessageThatIsNoHeaderIsAnErrorNamingItsSender) {
  const std::vector<int64_t> words = {1, 2, 3};
  const std::vector<MemberEntry> members = {{1, words, "broadcast"}};
  const std::string message = encode_message({MessageKind::kHeader, 9, 1, members, ErrorCode::kExecution, {}}, 0);
  expect_malformed("", "shorter than a header");
  expect_malformed(message.substr(0, 10), "shorter than a header");
  expect_malformed(std::string(message.size(), 'x'), "no header");
  expect_malformed(message.substr(0, message.size() - 1), "shorter than its header says");
  std::string other_version = message;
  other_version[4] = 7;
  expect_malformed(other_version, "another version of the header");
  std::string other_kind = message;
  other_kind[8] = 9;
  expect_malformed(other_kind, "an unknown kind of message");
  // A member count, or a word count, so large that its bytes would wrap:
  // still caught.
  std::string many = message;
  many[24] = many[25] = many[26] = many[27] = '\xff';
  expect_malformed(many, "shorter than its header says");
  // The first member's word count: after the 56 bytes of the fixed part
  // and the member's device.
  std::string huge = message;
  huge[60] = huge[61] = huge[62] = huge[63] = '\xff';
  expect_malformed(huge, "shorter than its header says");
}

TEST(Wire, WordsAndBytesReadBackAndAShortMessageIsAnErrorNamingItsSender) {
  std::string message;
  put_word(message, 7);
  put_bytes(message, "tag");
  put_word(message, 2);
  WireReader in(message, "rendezvous", "process 1 (host vm, pid 42)");
  EXPECT_EQ(in.word(), 7u);
  EXPECT_EQ(in.bytes(), "tag");
  EXPECT_THROW(in.count(), CollectiveError);  // two words said to come, none there
  std::string huge;
  put_word(huge, uint64_t{1} << 60);
  WireReader counts(huge, "rendezvous", "process 1 (host vm, pid 42)");
  try {
    counts.count();
    ADD_FAILURE() << "a count the message cannot hold was read";
  } catch (const CollectiveError& e) {
    EXPECT_NE(std::string(e.what()).find("a message from process 1 (host vm, pid 42) is not one of ordo's rendezvous"),
              std::string::npos)
        << e.what();
  }
}

TEST(ChannelTags, InRangeAndTheSameForTheSameGroup) {
  for (int upper : {kFirstChannelTag + 1, 32767, 0x7fffffff}) {
    for (const std::vector<int>& group : std::vector<std::vector<int>>{{}, {0}, {0, 1}, {3, 1, 2}, {1 << 29}}) {
      const int tag = channel_tag(group, upper);
      EXPECT_GE(tag, kFirstChannelTag);
      EXPECT_LE(tag, upper);
      EXPECT_EQ(tag, channel_tag(group, upper));
    }
  }
}

TEST(ChannelTags, GroupsOfAJobGetTheirOwnTags) {
  // Every ordered pair of 16 devices, and the group of all of them: the
  // order of the members is the order of the reduction, so [0, 1] and
  // [1, 0] are different channels.
  std::set<int> tags;
  int groups = 0;
  for (int a = 0; a < 16; ++a) {
    for (int b = 0; b < 16; ++b) {
      if (a == b) continue;
      const std::vector<int> pair = {a, b};
      tags.insert(channel_tag(pair, 0x7fffffff));
      ++groups;
    }
  }
  std::vector<int> all(16);
  for (int d = 0; d < 16; ++d) all[static_cast<size_t>(d)] = d;
  tags.insert(channel_tag(all, 0x7fffffff));
  EXPECT_EQ(static_cast<int>(tags.size()), groups + 1);
}

TEST(ChannelTags, NoRoomForChannelsIsAnError) {
  const std::vector<int> group = {0, 1};
  EXPECT_THROW(channel_tag(group, kFirstChannelTag), InvalidArgument);
}

}  // namespace
}  // namespace ordo::comm
