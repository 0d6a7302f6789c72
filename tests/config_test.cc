// The ORDO_* variables (core/config.h): every good value reaches its field,
// every bad one is an error naming the variable and its value when the
// runtime starts (not at the first collective wait, the first mark_step or
// the first compile, as before), and an unknown name is warned about.
#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "core/config.h"
#include "device/cpu_placement.h"
#include "ordo/ordo.h"

namespace ordo {
namespace {

struct Good {
  const char* name;
  const char* value;
  std::function<bool(const Config&)> took_effect;
};

const std::vector<Good>& good_values() {
  static const std::vector<Good> values = {
      {"ORDO_NUM_DEVICES", "3", [](const Config& c) { return c.num_devices == 3; }},
      {"ORDO_BACKEND", "in_process", [](const Config& c) { return c.backend == "in_process"; }},
      {"ORDO_BACKEND", "mpi", [](const Config& c) { return c.backend == "mpi"; }},
      {"ORDO_COLLECTIVE_WARN_SECONDS", "2", [](const Config& c) { return c.collective_warn_seconds == 2.0; }},
      {"ORDO_COLLECTIVE_TIMEOUT_SECONDS", "7.5", [](const Config& c) { return c.collective_timeout_seconds == 7.5; }},
      {"ORDO_COLLECTIVE_TIMEOUT_SECONDS", "1e300", [](const Config& c) { return c.collective_timeout_seconds == 1e300; }},
      {"ORDO_MAX_STEPS_AHEAD", "0", [](const Config& c) { return c.max_steps_ahead == 0; }},
      {"ORDO_MAX_STEPS_AHEAD", "1048576", [](const Config& c) { return c.max_steps_ahead == 1048576; }},
      {"ORDO_CPU_BIND", "none", [](const Config& c) { return c.cpu_bind == false; }},
      {"ORDO_CPU_BIND", "cores", [](const Config& c) { return c.cpu_bind == true; }},
      {"ORDO_KERNEL_THREADS", "64", [](const Config& c) { return c.kernel_threads == 64; }},
      {"ORDO_MPI_SHM", "off", [](const Config& c) { return !c.mpi_shm; }},
      {"ORDO_MPI_SHM", "0", [](const Config& c) { return !c.mpi_shm; }},
      {"ORDO_MESH_ADDRESS", "10.1.2.3", [](const Config& c) { return c.mesh_address == "10.1.2.3"; }},
      {"ORDO_LOG_LEVEL", "debug", [](const Config& c) { return c.log_level == LogLevel::kDebug; }},
      {"ORDO_LOG_LEVEL", "0", [](const Config& c) { return c.log_level == LogLevel::kError; }},
      {"ORDO_DEBUG", "1", [](const Config& c) { return c.debug; }},
      {"ORDO_IR_DEBUG", "on", [](const Config& c) { return c.ir_debug; }},
      {"ORDO_SAVE_GRAPHS_FILE", "/tmp/g", [](const Config& c) { return c.save_graphs_file == "/tmp/g"; }},
      {"ORDO_SAVE_GRAPHS_FMT", "dot", [](const Config& c) { return c.save_graphs_format == GraphFileFormat::kDot; }},
      {"ORDO_TRACE_FILE", "/tmp/t.json", [](const Config& c) { return c.trace_file == "/tmp/t.json"; }},
  };
  return values;
}

struct Bad {
  const char* name;
  const char* value;
  const char* says;  // the whole message
};

const std::vector<Bad>& bad_values() {
  static const std::vector<Bad> values = {
      {"ORDO_NUM_DEVICES", "four", "ORDO_NUM_DEVICES: 'four' is not a whole number"},
      {"ORDO_NUM_DEVICES", "0", "ORDO_NUM_DEVICES: the number of devices must be in [1, 1024], got 0"},
      {"ORDO_BACKEND", "shared_memory", "ORDO_BACKEND: 'shared_memory' is not one of in_process, mpi"},
      {"ORDO_COLLECTIVE_TIMEOUT_SECONDS", "x", "ORDO_COLLECTIVE_TIMEOUT_SECONDS: 'x' is not a positive, finite number of seconds"},
      {"ORDO_COLLECTIVE_TIMEOUT_SECONDS", "-1", "ORDO_COLLECTIVE_TIMEOUT_SECONDS: '-1' is not a positive, finite number of seconds"},
      {"ORDO_COLLECTIVE_TIMEOUT_SECONDS", "0", "ORDO_COLLECTIVE_TIMEOUT_SECONDS: '0' is not a positive, finite number of seconds"},
      {"ORDO_COLLECTIVE_TIMEOUT_SECONDS", "nan", "ORDO_COLLECTIVE_TIMEOUT_SECONDS: 'nan' is not a positive, finite number of seconds"},
      {"ORDO_COLLECTIVE_TIMEOUT_SECONDS", "inf", "ORDO_COLLECTIVE_TIMEOUT_SECONDS: 'inf' is not a positive, finite number of seconds"},
      {"ORDO_COLLECTIVE_TIMEOUT_SECONDS", "1e999", "ORDO_COLLECTIVE_TIMEOUT_SECONDS: '1e999' is not a positive, finite number of seconds"},
      {"ORDO_COLLECTIVE_WARN_SECONDS", "10s", "ORDO_COLLECTIVE_WARN_SECONDS: '10s' is not a positive, finite number of seconds"},
      {"ORDO_MAX_STEPS_AHEAD", "x", "ORDO_MAX_STEPS_AHEAD: 'x' is not a whole number of steps from 0 to 1048576"},
      {"ORDO_MAX_STEPS_AHEAD", "-1", "ORDO_MAX_STEPS_AHEAD: '-1' is not a whole number of steps from 0 to 1048576"},
      {"ORDO_MAX_STEPS_AHEAD", "1048577", "ORDO_MAX_STEPS_AHEAD: '1048577' is not a whole number of steps from 0 to 1048576"},
      {"ORDO_CPU_BIND", "sideways", "ORDO_CPU_BIND: 'sideways' is not one of cores, none"},
      {"ORDO_KERNEL_THREADS", "0", "ORDO_KERNEL_THREADS: '0' is not a whole number of threads >= 1"},
      {"ORDO_KERNEL_THREADS", " 2", "ORDO_KERNEL_THREADS: ' 2' is not a whole number of threads >= 1"},
      {"ORDO_KERNEL_THREADS", "2.5", "ORDO_KERNEL_THREADS: '2.5' is not a whole number of threads >= 1"},
      {"ORDO_KERNEL_THREADS", "99999999999", "ORDO_KERNEL_THREADS: '99999999999' is not a whole number of threads >= 1"},
      {"ORDO_MPI_SHM", "maybe", "ORDO_MPI_SHM: 'maybe' is not a switch (1, on, true; or 0, off, false)"},
      {"ORDO_MESH_ADDRESS", "hosta", "ORDO_MESH_ADDRESS: 'hosta' is not an IPv4 address such as 10.0.0.2"},
      {"ORDO_LOG_LEVEL", "loud", "ORDO_LOG_LEVEL: 'loud' is not a log level (error, warning, info, debug or 0-3)"},
      {"ORDO_DEBUG", "yes", "ORDO_DEBUG: 'yes' is not a switch (1, on, true; or 0, off, false)"},
      {"ORDO_IR_DEBUG", "2", "ORDO_IR_DEBUG: '2' is not a switch (1, on, true; or 0, off, false)"},
      {"ORDO_SAVE_GRAPHS_FMT", "svg", "ORDO_SAVE_GRAPHS_FMT: 'svg' is not one of text, dot"},
  };
  return values;
}

TEST(ConfigTest, NothingSetIsTheDefaults) {
  const ParsedConfig parsed = parse_config({});
  EXPECT_EQ(parsed.config, Config{});
  EXPECT_TRUE(parsed.errors.empty());
  EXPECT_TRUE(parsed.unknown.empty());
  EXPECT_EQ(parse_config({{"ORDO_NUM_DEVICES", ""}, {"ORDO_BACKEND", ""}}).config, Config{});  // empty is unset
}

TEST(ConfigTest, EveryGoodValueReachesItsField) {
  for (const Good& good : good_values()) {
    const ParsedConfig parsed = parse_config({{good.name, good.value}});
    EXPECT_TRUE(parsed.errors.empty()) << good.name << "=" << good.value << ": " << parsed.errors.front();
    EXPECT_TRUE(good.took_effect(parsed.config)) << good.name << "=" << good.value;
    EXPECT_NE(parsed.config, Config{}) << good.name << "=" << good.value;
  }
}

TEST(ConfigTest, EveryBadValueIsNamedAndKeepsTheDefault) {
  for (const Bad& bad : bad_values()) {
    const ParsedConfig parsed = parse_config({{bad.name, bad.value}});
    EXPECT_EQ(parsed.errors, std::vector<std::string>{bad.says}) << bad.name << "=" << bad.value;
    EXPECT_EQ(parsed.config, Config{}) << bad.name << "=" << bad.value;
  }
  const ParsedConfig two = parse_config({{"ORDO_DEBUG", "yes"}, {"ORDO_NUM_DEVICES", "four"}});
  EXPECT_EQ(two.errors, (std::vector<std::string>{"ORDO_NUM_DEVICES: 'four' is not a whole number",
                                                  "ORDO_DEBUG: 'yes' is not a switch (1, on, true; or 0, off, false)"}));
}

TEST(ConfigTest, UnknownNamesAreFoundAndTheirTypoNamed) {
  const ParsedConfig parsed = parse_config({{"ORDO_COLECTIVE_TIMEOUT_SECONDS", "10"},
                                            {"ORDO_TEST_FAILURE", "raise"},
                                            {"ORDO_FUZZ_SEED", "3"},
                                            {"ORDO_BUILD_DIR", "build-address"},
                                            {"ORDO_NUM_DEVICES", "2"}});
  EXPECT_EQ(parsed.unknown, std::vector<std::string>{"ORDO_COLECTIVE_TIMEOUT_SECONDS"});
  EXPECT_EQ(parsed.config.num_devices, 2);
  EXPECT_EQ(closest_variable("ORDO_COLECTIVE_TIMEOUT_SECONDS"), "ORDO_COLLECTIVE_TIMEOUT_SECONDS");
  EXPECT_EQ(closest_variable("ORDO_NUM_DEVICE"), "ORDO_NUM_DEVICES");
  EXPECT_EQ(closest_variable("ORDO_LOGLEVEL"), "ORDO_LOG_LEVEL");
  EXPECT_EQ(closest_variable("ORDO_MAX_STEPS_AHAED"), "ORDO_MAX_STEPS_AHEAD");
  EXPECT_EQ(closest_variable("ORDO_COLLECTIVE_TIMEOUT"), "ORDO_COLLECTIVE_TIMEOUT_SECONDS");
  EXPECT_EQ(closest_variable("ORDO_NUM_DEVICES_PER_HOST"), "ORDO_NUM_DEVICES");
  EXPECT_EQ(closest_variable("ORDO_COLOUR"), "");
}

// The runtime's start: setenv, init, and the variables of this test unset
// again whatever happens.
class ConfigStartTest : public ::testing::Test {
 protected:
  void SetUp() override {
    shutdown();
    load_config();  // the environment as the test found it
  }
  void TearDown() override {
    shutdown();
    for (const std::string& name : names_set_) unsetenv(name.c_str());
    load_config();
  }
  void set(const char* name, const char* value) {
    names_set_.push_back(name);
    setenv(name, value, 1);
  }
  // The message init(2) threw, "" when it started.
  static std::string start_error() {
    try {
      init(2);
    } catch (const InvalidArgument& error) {
      return error.what();
    }
    return "";
  }

  std::vector<std::string> names_set_;
};

// Before, a bad timeout was read when a collective first waited (500 steps
// in, on one device), a bad bound at the first mark_step, a bad log level
// or ORDO_DEBUG was a warning, a bad format one at the first compile, the
// MPI ones only under mpirun.
TEST_F(ConfigStartTest, EveryBadValueFailsTheStartAndStartsNothing) {
  for (const Bad& bad : bad_values()) {
    set(bad.name, bad.value);
    EXPECT_EQ(start_error(), bad.says) << bad.name << "=" << bad.value;
    EXPECT_FALSE(is_initialized()) << bad.name << "=" << bad.value;
    unsetenv(bad.name);
  }
  EXPECT_EQ(start_error(), "");
  EXPECT_EQ(world_size(), 2);
}

TEST_F(ConfigStartTest, ABadValueLeavesTheConfigurationAsItWas) {
  set("ORDO_MAX_STEPS_AHEAD", "5");
  init(1);
  shutdown();
  set("ORDO_COLLECTIVE_TIMEOUT_SECONDS", "nan");
  EXPECT_THROW(load_config(), InvalidArgument);
  EXPECT_EQ(config().max_steps_ahead, 5);
  EXPECT_EQ(config().collective_timeout_seconds, 300.0);
}

// What no setting in code overrides in this binary: the configuration's
// values are what the layers read.
TEST_F(ConfigStartTest, GoodValuesTakeEffectAtTheStart) {
  set("ORDO_COLLECTIVE_TIMEOUT_SECONDS", "7.5");
  set("ORDO_COLLECTIVE_WARN_SECONDS", "2");
  set("ORDO_MAX_STEPS_AHEAD", "0");
  set("ORDO_LOG_LEVEL", "info");
  set("ORDO_IR_DEBUG", "1");
  set("ORDO_CPU_BIND", "none");
  EXPECT_EQ(collective_timeouts().timeout_seconds, 300.0);  // read at the start, not before
  init(3);
  EXPECT_EQ(collective_timeouts().timeout_seconds, 7.5);
  EXPECT_EQ(collective_timeouts().warn_seconds, 2.0);
  EXPECT_EQ(max_steps_ahead(), 0);
  EXPECT_EQ(log_level(), LogLevel::kInfo);
  EXPECT_TRUE(ir_debug_enabled());
  EXPECT_FALSE(device::cpu_binding_enabled());
  shutdown();
  unsetenv("ORDO_MAX_STEPS_AHEAD");
  unsetenv("ORDO_IR_DEBUG");
  init(1);  // a runtime started again sees what changed
  EXPECT_EQ(max_steps_ahead(), 2);
  EXPECT_FALSE(ir_debug_enabled());
}

TEST_F(ConfigStartTest, AnUnknownNameIsWarnedAboutOnceNamingTheClosest) {
  std::mutex mu;
  std::vector<std::string> lines;
  set_log_sink([&](LogLevel, std::string_view line) {
    std::lock_guard<std::mutex> lock(mu);
    lines.emplace_back(line);
  });
  set("ORDO_COLECTIVE_TIMEOUT_SECONDS", "10");
  set("ORDO_TEST_SOMETHING", "1");  // the project's tests' own
  init(1);
  shutdown();
  init(1);  // said once per process
  set_log_sink({});
  EXPECT_EQ(lines, std::vector<std::string>{"ordo: ORDO_COLECTIVE_TIMEOUT_SECONDS is not a variable ordo reads; did "
                                            "you mean ORDO_COLLECTIVE_TIMEOUT_SECONDS? (the README's table lists them)"});
}

}  // namespace
}  // namespace ordo
