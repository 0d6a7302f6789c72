// The timeline (ordo/trace.h): the recorder's on/off, the file's Chrome
// trace events (one per line: checked here with regexes; the full JSON
// format is checked from Python, tests/python/test_trace.py), every
// collective of every device in it, and the late device named.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <thread>

#include <unistd.h>

#include "core/trace_events.h"
#include "core/trace_json.h"
#include "spmd.h"
#include "test_util.h"

namespace ordo {
namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / (name + "." + std::to_string(::getpid()) + ".json")).string();
}

std::vector<std::string> lines_of(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The value of "key":<number> in an event's line; -1 when absent.
double field(const std::string& line, const std::string& key) {
  std::smatch match;
  if (!std::regex_search(line, match, std::regex("\"" + key + "\":(-?[0-9.]+)"))) return -1;
  return std::stod(match[1]);
}

bool is_named(const std::string& line, const std::string& name) {
  return line.find("\"name\":\"" + name + "\"") != std::string::npos;
}

TEST(TraceEvents, RecordsOnlyWhileOn) {
  trace_events::record(0, {"off", "execute", 1, 2, 0});
  trace_events::start();
  EXPECT_TRUE(trace_events::on());
  trace_events::record(0, {"on", "execute", 3, 4, 0});
  { trace_events::ScopedEvent scoped("scoped", "compile", 1, 1, trace_events::Lane::kHost); }
  trace_events::record(-1, {"no slot", "execute", 3, 4, 0});
  trace_events::Recording recording = trace_events::stop();
  EXPECT_FALSE(trace_events::on());
  trace_events::record(0, {"after", "execute", 5, 6, 0});
  ASSERT_EQ(recording.events.size(), 2u);
  std::map<std::string, trace_events::Event> by_name;
  for (const auto& e : recording.events) by_name[std::string(e.name)] = e;
  EXPECT_EQ(by_name["on"].start_ns, 3);
  EXPECT_EQ(by_name["scoped"].lane, trace_events::Lane::kHost);
  EXPECT_GE(by_name["scoped"].start_ns, recording.origin_ns);
  EXPECT_GE(by_name["scoped"].duration_ns, 0);
  trace_events::start();  // a new trace starts empty
  EXPECT_TRUE(trace_events::stop().events.empty());
}

TEST(TraceJson, RowsAreNamedAndInTimeOrderWithEnclosingEventsFirst) {
  trace_events::Recording recording;
  recording.origin_ns = 1000;
  trace_events::Event all_reduce{"all_reduce", "collective", 4000, 3000, 3};
  all_reduce.wait_ns = 1000;  // written as a "wait" event inside it
  all_reduce.wait_from_ns = 5000;
  all_reduce.last_device = 2;
  all_reduce.bytes = 1024;
  trace_events::Event earlier{"execute", "execute", 2000, 6000, 3};
  earlier.graph_hash = 0xabc;
  recording.events = {all_reduce, earlier, {"compile", "compile", 1500, 10, 3, trace_events::Lane::kHost}};
  const std::string text = trace_json::trace_file(
      {trace_json::process_events(recording, {1, 2, 3, 1}, recording.origin_ns)}, recording.origin_ns);
  std::istringstream in(text);
  std::vector<std::string> spans;
  bool named = false, host_named = false;
  for (std::string line; std::getline(in, line);) {
    if (line.find("\"ph\":\"X\"") != std::string::npos) spans.push_back(line);
    named |= line.find("\"name\":\"ordo:0 (ordinal 3)\"") != std::string::npos;
    host_named |= line.find("\"name\":\"ordo:0 (ordinal 3) host\"") != std::string::npos &&
                  line.find("\"tid\":1000003") != std::string::npos;
  }
  EXPECT_TRUE(named);
  EXPECT_TRUE(host_named);
  ASSERT_EQ(spans.size(), 4u);
  EXPECT_TRUE(is_named(spans[0], "execute")) << spans[0];
  EXPECT_NE(spans[0].find("\"graph_hash\":\"0000000000000abc\""), std::string::npos);
  EXPECT_TRUE(is_named(spans[1], "all_reduce"));
  EXPECT_EQ(field(spans[1], "ts"), 3.0);
  EXPECT_EQ(field(spans[1], "dur"), 3.0);
  EXPECT_EQ(field(spans[1], "wait_us"), 1.0);
  EXPECT_EQ(field(spans[1], "last_device"), 2);
  EXPECT_EQ(field(spans[1], "bytes"), 1024);
  EXPECT_EQ(field(spans[1], "pid"), 1);
  EXPECT_EQ(field(spans[1], "tid"), 3);
  EXPECT_TRUE(is_named(spans[2], "wait"));
  EXPECT_EQ(field(spans[2], "ts"), 4.0);
  EXPECT_EQ(field(spans[2], "dur"), 1.0);
  EXPECT_TRUE(is_named(spans[3], "compile"));
  EXPECT_EQ(field(spans[3], "ts"), 0.5);
}

class TraceTest : public testing::RuntimeTest<4> {
 protected:
  void TearDown() override {
    if (is_tracing()) stop_trace();
    RuntimeTest::TearDown();
  }
};

TEST_F(TraceTest, BadCallsAreInvalidAndChangeNothing) {
  EXPECT_THROW(stop_trace(), InvalidArgument);
  EXPECT_THROW(start_trace(""), InvalidArgument);
  EXPECT_THROW(start_trace("/no/such/folder/trace.json"), InvalidArgument);
  EXPECT_FALSE(is_tracing());
  const std::string path = temp_path("ordo_trace_twice");
  start_trace(path);
  EXPECT_THROW(start_trace(path), InvalidArgument);
  EXPECT_TRUE(is_tracing());
  EXPECT_EQ(stop_trace(), path);
  EXPECT_FALSE(is_tracing());
  EXPECT_FALSE(lines_of(path).empty());
  std::filesystem::remove(path);
}

// Four devices, three steps of two all_reduces; device 2 comes 300 ms late
// to the second step's: its peers wait and name it.
TEST_F(TraceTest, EveryCollectiveOfEveryDeviceIsInTheFileAndTheLateDeviceIsNamed) {
  constexpr int kSteps = 3;
  const std::string path = temp_path("ordo_trace_devices");
  start_trace(path);
  auto outcomes = testing::run_on_devices<int>(4, [](int device) {
    for (int step = 0; step < kSteps; ++step) {
      Tensor x = from_vector<float>({1, 2, 3, 4}, {4});
      if (step == 1 && device == 2) std::this_thread::sleep_for(std::chrono::milliseconds(300));
      Tensor y = all_reduce(ReduceType::kSum, all_reduce(ReduceType::kSum, x));
      mark_step();
      (void)y.to_vector<float>();
    }
    return device;
  });
  for (const auto& outcome : outcomes) outcome.get();
  stop_trace();
  std::map<int, int> collectives, late, mark_steps;
  std::map<int64_t, double> last_ts;
  for (const std::string& line : lines_of(path)) {
    if (line.find("\"ph\":\"X\"") == std::string::npos) continue;
    const auto tid = static_cast<int64_t>(field(line, "tid"));
    EXPECT_GE(field(line, "ts"), last_ts[tid]) << line;  // each row in time order
    last_ts[tid] = field(line, "ts");
    if (is_named(line, "all_reduce")) {
      ++collectives[static_cast<int>(tid)];
      EXPECT_EQ(field(line, "bytes"), 16) << line;
      if (field(line, "last_device") == 2 && field(line, "wait_us") > 150000) ++late[static_cast<int>(tid)];
    }
    if (is_named(line, "mark_step")) ++mark_steps[static_cast<int>(tid - trace_json::kHostLaneTid)];
  }
  for (int d = 0; d < 4; ++d) {
    EXPECT_EQ(collectives[d], 2 * kSteps) << "device " << d;
    EXPECT_EQ(mark_steps[d], kSteps) << "device " << d;
    // The peers of the late device waited for it at the first all_reduce of step 1.
    if (d != 2) {
      EXPECT_GE(late[d], 1) << "device " << d;
    }
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace ordo
