// The counter-based random numbers of ordo: element i of a draw depends only
// on (seed, i), so a result has the same bits whatever the thread count or
// the blocking of the kernel that makes it. rand_uniform and rand_normal
// (made on the host) and the RandomUniform op's kernel (made when the graph
// runs) draw from this one generator.
//
//   float u = ordo::uniform_sample<float>(seed, i, 0.0, 1.0);  // in [0, 1)
#pragma once

#include <cmath>
#include <cstdint>

namespace ordo {

// splitmix64 of (seed, counter).
inline uint64_t random_bits(uint64_t seed, uint64_t counter) {
  uint64_t z = seed * 0x9E3779B97F4A7C15ull + counter * 0xD1B54A32D192ED03ull + 0x632BE59BD9B4E019ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Uniform in [0, 1) with 53 random bits.
inline double unit_uniform(uint64_t seed, uint64_t counter) {
  return static_cast<double>(random_bits(seed, counter) >> 11) * 0x1.0p-53;
}

// Uniform in [low, high) (low <= high) as T: computed in double and rounded
// once; a double just below high that rounds to high in float32 becomes the
// float below it, so [low, high) holds in T too.
template <typename T>
T uniform_sample(uint64_t seed, uint64_t counter, double low, double high) {
  const T value = static_cast<T>(low + (high - low) * unit_uniform(seed, counter));
  if (low < high && value >= static_cast<T>(high)) {
    return std::nextafter(static_cast<T>(high), static_cast<T>(low));
  }
  return value;
}

}  // namespace ordo
