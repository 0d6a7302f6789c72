#include "core/log.h"

#include <atomic>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>

#include "core/config.h"

namespace ordo {
namespace {

constexpr int kUnset = -1;

void write_on_stderr(std::string_view line) {
  // One call, so that lines of threads logging at once do not interleave.
  std::fprintf(stderr, "%.*s\n", static_cast<int>(line.size()), line.data());
}

// The level set in code, or kUnset: then ORDO_LOG_LEVEL's (core/config.h).
std::atomic<int> g_level{kUnset};

LogLevel current_level() {
  const int level = g_level.load(std::memory_order_relaxed);
  return level != kUnset ? static_cast<LogLevel>(level) : config().log_level;
}

// Locking: g_sink_mu guards g_sink only; a sink is called with no lock
// held (it may log itself, or take Python's GIL).
std::mutex g_sink_mu;
std::shared_ptr<const LogSink> g_sink;

std::shared_ptr<const LogSink> current_sink() {
  std::lock_guard<std::mutex> lock(g_sink_mu);
  return g_sink;
}

}  // namespace

void set_log_level(LogLevel level) { g_level.store(static_cast<int>(level), std::memory_order_relaxed); }

LogLevel log_level() { return current_level(); }

std::optional<LogLevel> parse_log_level(std::string_view text) {
  for (LogLevel level : {LogLevel::kError, LogLevel::kWarning, LogLevel::kInfo, LogLevel::kDebug}) {
    if (text == log_level_name(level) || text == std::string(1, static_cast<char>('0' + static_cast<int>(level)))) {
      return level;
    }
  }
  return std::nullopt;
}

std::string_view log_level_name(LogLevel level) {
  switch (level) {
    case LogLevel::kError:
      return "error";
    case LogLevel::kWarning:
      return "warning";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kDebug:
      return "debug";
  }
  return "unknown";
}

void set_log_sink(LogSink sink) {
  std::shared_ptr<const LogSink> next = sink ? std::make_shared<const LogSink>(std::move(sink)) : nullptr;
  std::lock_guard<std::mutex> lock(g_sink_mu);
  g_sink.swap(next);
}

namespace logging {

bool enabled(LogLevel level) { return static_cast<int>(level) <= static_cast<int>(current_level()); }

std::string line_of(std::string_view message) { return "ordo: " + std::string(message); }

void log(LogLevel level, std::string_view message) {
  if (enabled(level)) log_line(level, line_of(message));
}

void log_line(LogLevel level, std::string_view line) {
  if (!enabled(level)) return;
  const std::shared_ptr<const LogSink> sink = current_sink();
  if (!sink) {
    write_on_stderr(line);
    return;
  }
  try {
    (*sink)(level, line);
  } catch (...) {
    // A sink that throws must not end a worker's task: the line is lost.
  }
}

}  // namespace logging
}  // namespace ordo
