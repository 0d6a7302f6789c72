// Where ordo's messages go: one sink for every line ordo prints (a slow
// collective's warning, a process mesh's news, ORDO_DEBUG's analysis),
// filtered by level.
//
//   ordo::set_log_level(ordo::LogLevel::kInfo);  // or ORDO_LOG_LEVEL=info
//   ordo::set_log_sink([](ordo::LogLevel level, std::string_view line) {
//     my_logger(level, line);                     // "ordo: device 1 has waited 30 s in ..."
//   });
//   ordo::set_log_sink({});                       // back to stderr
//
// Levels, most severe first: error, warning (the default), info, debug. The
// environment's ORDO_LOG_LEVEL (error|warning|info|debug, or 0-3) sets the
// level unless set_log_level did; a value that is none of these keeps the
// default and fails the runtime's start (ordo::init) naming it.
#pragma once

#include <functional>
#include <optional>
#include <string_view>

namespace ordo {

enum class LogLevel : int { kError = 0, kWarning = 1, kInfo = 2, kDebug = 3 };

// Lines of this level and more severe ones are written; the others dropped.
void set_log_level(LogLevel level);
LogLevel log_level();

// "error", "warning", "info", "debug"; or "0" to "3". Anything else: nullopt.
std::optional<LogLevel> parse_log_level(std::string_view text);
std::string_view log_level_name(LogLevel level);

// Takes every line that passes the level (without its newline), from any
// thread, possibly several at once; it must not throw (what it throws is
// dropped) nor wait for ordo. An empty sink writes the lines on stderr, one
// whole line per write.
using LogSink = std::function<void(LogLevel level, std::string_view line)>;
void set_log_sink(LogSink sink);

}  // namespace ordo
