#include "core/device_numbers.h"

#include <ostream>

namespace ordo {

std::ostream& operator<<(std::ostream& out, LocalDevice device) { return out << device.index(); }
std::ostream& operator<<(std::ostream& out, GlobalOrdinal ordinal) { return out << ordinal.value(); }

}  // namespace ordo
