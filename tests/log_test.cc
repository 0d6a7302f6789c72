// The log (ordo/log.h: levels, the sink, stderr), compiled graphs saved
// with ORDO_SAVE_GRAPHS_FILE, and ORDO_DEBUG's graph comparison.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>

#include "comm/deadlines.h"
#include "core/log.h"
#include "executor/debug_analysis.h"
#include "test_util.h"

namespace ordo {
namespace {

// Takes the log's lines for the life of a test, at the level given.
class CapturedLog {
 public:
  explicit CapturedLog(LogLevel level) : old_level_(log_level()) {
    set_log_level(level);
    set_log_sink([this](LogLevel, std::string_view line) {
      std::lock_guard<std::mutex> lock(mu_);
      lines_.emplace_back(line);
    });
  }
  ~CapturedLog() {
    set_log_sink({});
    set_log_level(old_level_);
  }
  std::vector<std::string> lines() {
    std::lock_guard<std::mutex> lock(mu_);
    return lines_;
  }

 private:
  LogLevel old_level_;
  std::mutex mu_;
  std::vector<std::string> lines_;
};

TEST(LogTest, LevelsParseByNameAndNumber) {
  EXPECT_EQ(parse_log_level("error"), LogLevel::kError);
  EXPECT_EQ(parse_log_level("warning"), LogLevel::kWarning);
  EXPECT_EQ(parse_log_level("info"), LogLevel::kInfo);
  EXPECT_EQ(parse_log_level("debug"), LogLevel::kDebug);
  EXPECT_EQ(parse_log_level("0"), LogLevel::kError);
  EXPECT_EQ(parse_log_level("3"), LogLevel::kDebug);
  EXPECT_EQ(parse_log_level("4"), std::nullopt);
  EXPECT_EQ(parse_log_level("loud"), std::nullopt);
  EXPECT_EQ(parse_log_level(""), std::nullopt);
  EXPECT_EQ(log_level_name(LogLevel::kInfo), "info");
}

TEST(LogTest, TheSinkTakesTheLinesOfTheLevelAndAbove) {
  CapturedLog log(LogLevel::kWarning);
  logging::log(LogLevel::kError, "bad");
  logging::log(LogLevel::kWarning, "careful");
  logging::log(LogLevel::kInfo, "by the way");
  logging::log(LogLevel::kDebug, "details");
  EXPECT_EQ(log.lines(), (std::vector<std::string>{"ordo: bad", "ordo: careful"}));
  set_log_level(LogLevel::kDebug);
  logging::log(LogLevel::kDebug, "details");
  EXPECT_EQ(log.lines().back(), "ordo: details");
}

TEST(LogTest, WithoutASinkLinesGoToStderr) {
  const LogLevel old = log_level();
  set_log_level(LogLevel::kWarning);
  ::testing::internal::CaptureStderr();
  logging::log(LogLevel::kWarning, "one whole line");
  logging::log(LogLevel::kInfo, "not this one");
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "ordo: one whole line\n");
  set_log_level(old);
}

TEST(LogTest, ASlowWaitsWarningGoesThroughTheLog) {
  CapturedLog log(LogLevel::kWarning);
  comm::report_warning(comm::slow_wait_warning(GlobalOrdinal(1), 30, "all_reduce #3", "2"));
  EXPECT_EQ(log.lines(), (std::vector<std::string>{"ordo: device 1 has waited 30 s in all_reduce #3; missing devices: 2"}));
  set_log_level(LogLevel::kError);
  comm::report_warning("dropped");
  EXPECT_EQ(log.lines().size(), 1u);
}

TEST(LogTest, ASinkThatThrowsLosesItsLineOnly) {
  set_log_sink([](LogLevel, std::string_view) { throw std::runtime_error("sink failed"); });
  EXPECT_NO_THROW(logging::log(LogLevel::kError, "lost"));
  set_log_sink({});
}

TEST(GraphDifferenceTest, NamesTheFirstDifferingNodes) {
  const std::vector<std::string> a = {"%0 = device_data() : float32[3]", "%1 = full() reals=[0.1] : float32[]",
                                      "%2 = mul(%0, %1) : float32[3]"};
  std::vector<std::string> b = a;
  EXPECT_EQ(executor::describe_difference(a, b), "");
  b[1] = "%1 = full() reals=[0.2] : float32[]";
  EXPECT_EQ(executor::describe_difference(a, b), "node %1: full() reals=[0.1] : float32[] vs full() reals=[0.2] : float32[]");
  b.push_back("%3 = exp(%2) : float32[3]");
  EXPECT_EQ(executor::describe_difference(a, b),
            "node %1: full() reals=[0.1] : float32[] vs full() reals=[0.2] : float32[] (3 nodes vs 4)");
  b[2] = "%2 = add(%0, %1) : float32[3]";
  EXPECT_EQ(executor::describe_difference(a, b, 1),
            "node %1: full() reals=[0.1] : float32[] vs full() reals=[0.2] : float32[] (3 nodes vs 4)");
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

int count(const std::string& text, const std::string& part) {
  int n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

class GraphDumpTest : public testing::OneDeviceTest {
 protected:
  void SetUp() override {
    path_ = ::testing::TempDir() + "ordo_graphs_" + std::to_string(::getpid());
    std::remove(file().c_str());
    restart_with("ORDO_SAVE_GRAPHS_FILE", path_.c_str());
  }
  // The runtime reads the variables when it starts.
  void restart_with(const char* name, const char* value) {
    setenv(name, value, 1);
    testing::OneDeviceTest::SetUp();
    // The counters are the process's: another test of this binary may have
    // counted steps.
    clear_counters();
  }
  void TearDown() override {
    unsetenv("ORDO_SAVE_GRAPHS_FILE");
    unsetenv("ORDO_SAVE_GRAPHS_FMT");
    std::remove(file().c_str());
    testing::OneDeviceTest::TearDown();
  }
  std::string file() const { return path_ + ".0"; }

  std::string path_;
};

TEST_F(GraphDumpTest, EveryUncachedCompileAppendsItsGraph) {
  const Tensor x = from_vector<float>({1, 2, 3}, {3});
  for (double factor : {2.0, 3.0, 2.0}) {
    Tensor y = x * factor;
    mark_step();
    y.to_vector<float>();
  }
  const std::string text = read_file(file());
  EXPECT_EQ(count(text, "## ordo graph: device 0, graph "), 2) << text;  // the third step was a cache hit
  EXPECT_EQ(count(text, ", step 1\n"), 1) << text;
  EXPECT_EQ(count(text, ", step 2\n"), 1) << text;
  EXPECT_EQ(count(text, " = full() ints=[2] reals=[2] : float32[]\n"), 1) << text;
  EXPECT_EQ(count(text, " = full() ints=[3] reals=[3] : float32[]\n"), 1) << text;
  EXPECT_EQ(count(text, " = mul("), 2) << text;
}

TEST_F(GraphDumpTest, DotShowsCollectivesAndTheirTokenEdges) {
  restart_with("ORDO_SAVE_GRAPHS_FMT", "dot");
  const Tensor x = from_vector<float>({1, 2}, {2});
  Tensor y = all_reduce(ReduceType::kSum, all_reduce(ReduceType::kSum, x) + 1.0);
  mark_step();
  y.to_vector<float>();
  const std::string text = read_file(file());
  EXPECT_EQ(text.rfind("// ordo graph: device 0, graph ", 0), 0u) << text;
  EXPECT_EQ(count(text, "digraph \"graph "), 1) << text;
  EXPECT_EQ(count(text, "fillcolor=lightblue"), 2) << text;  // the two all_reduces
  // The first takes the device's token leaf, the second the first's token.
  EXPECT_EQ(count(text, "label=token"), 2) << text;
  EXPECT_EQ(count(text, "n1 -> n2 [style=dashed, color=blue, label=token]"), 1) << text;
  EXPECT_EQ(count(text, "peripheries=2"), 1) << text;  // the root: the second all_reduce (result and token)
}

// It was a warning at the first compile, after the program had run.
TEST_F(GraphDumpTest, ABadFormatFailsTheRuntimeStartNamingIt) {
  shutdown();
  setenv("ORDO_SAVE_GRAPHS_FMT", "svg", 1);
  try {
    init(1);
    FAIL() << "no error";
  } catch (const InvalidArgument& error) {
    EXPECT_STREQ(error.what(), "ORDO_SAVE_GRAPHS_FMT: 'svg' is not one of text, dot");
  }
  EXPECT_FALSE(is_initialized());
}

TEST_F(GraphDumpTest, AFileThatCannotBeWrittenWarnsAndTheStepRuns) {
  restart_with("ORDO_SAVE_GRAPHS_FILE", "/nonexistent-ordo-dir/graphs");
  CapturedLog log(LogLevel::kWarning);
  Tensor y = from_vector<float>({1, 2}, {2}) * 4.0;
  mark_step();
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{4, 8}));
  ASSERT_EQ(log.lines().size(), 1u);
  EXPECT_EQ(log.lines()[0],
            "ordo: cannot save compiled graphs to /nonexistent-ordo-dir/graphs.0 (ORDO_SAVE_GRAPHS_FILE): No such file "
            "or directory");
}

}  // namespace
}  // namespace ordo
