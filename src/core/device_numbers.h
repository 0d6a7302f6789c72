// The two numbers of a device, as two types, so that passing one for the
// other does not compile (comm/topology.h says where each comes from):
//   - LocalDevice: its index among this process's devices, 0 .. L-1, what
//     the process's per-device state (workers, graphs, metrics, Python's
//     `ordo:N`) is indexed by;
//   - GlobalOrdinal: its place in the world, 0 .. world-1, what collectives,
//     device news, fingerprints and messages speak.
// Only the topology turns one into the other (Topology::global_ordinal,
// local_device; the runtime's ordinal_of). Both are an int and cost
// nothing; they print as that int, so messages read as before.
//
//   LocalDevice d(1);
//   GlobalOrdinal o = runtime.ordinal_of(d);    // 5, in the second of 4-device processes
//   graphs_[d.slot()];  progress_[o.slot()];    // indexing says which
//   str_cat("device ", o);                      // "device 5"
#pragma once

#include <compare>
#include <cstddef>
#include <iosfwd>

namespace ordo {

class LocalDevice {
 public:
  constexpr explicit LocalDevice(int index) : index_(index) {}
  constexpr int index() const { return index_; }
  // For indexing a vector of per-device state.
  constexpr size_t slot() const { return static_cast<size_t>(index_); }
  friend constexpr auto operator<=>(LocalDevice, LocalDevice) = default;

 private:
  int index_;
};

class GlobalOrdinal {
 public:
  constexpr explicit GlobalOrdinal(int value) : value_(value) {}
  constexpr int value() const { return value_; }
  // For indexing a vector of per-ordinal state.
  constexpr size_t slot() const { return static_cast<size_t>(value_); }
  friend constexpr auto operator<=>(GlobalOrdinal, GlobalOrdinal) = default;

 private:
  int value_;
};

// Every device of a process of `count` devices, in order:
//   for (LocalDevice d : LocalDevices(count)) ...
class LocalDevices {
 public:
  explicit LocalDevices(int count) : count_(count) {}
  class Iterator {
   public:
    explicit Iterator(int index) : index_(index) {}
    LocalDevice operator*() const { return LocalDevice(index_); }
    Iterator& operator++() {
      ++index_;
      return *this;
    }
    bool operator==(const Iterator&) const = default;

   private:
    int index_;
  };
  Iterator begin() const { return Iterator(0); }
  Iterator end() const { return Iterator(count_); }

 private:
  int count_;
};

std::ostream& operator<<(std::ostream& out, LocalDevice device);
std::ostream& operator<<(std::ostream& out, GlobalOrdinal ordinal);

}  // namespace ordo
