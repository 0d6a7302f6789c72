// Writing a line to ordo's log (ordo/log.h: the level and the sink):
//
//   logging::log(LogLevel::kWarning, str_cat("device ", d, " has waited ..."));  // "ordo: device 0 has ..."
//
// Every line ordo prints goes through here, so that one level and one sink
// govern all of them.
#pragma once

#include <string>
#include <string_view>

#include "ordo/log.h"

namespace ordo::logging {

// True when a line of this level would be written: a caller that builds an
// expensive message asks first.
bool enabled(LogLevel level);
// Writes "ordo: " + message.
void log(LogLevel level, std::string_view message);
// Writes a line that already reads "ordo: ..." (one handed to a printer
// that could not print it).
void log_line(LogLevel level, std::string_view line);
// "ordo: " + message.
std::string line_of(std::string_view message);

}  // namespace ordo::logging
