// Run-time dispatch for the loops that touch every element. ordo is built
// for plain x86-64 (it must run on a CPU without AVX2 or AVX-512); a
// function marked ORDO_SIMD_CLONES is compiled three times (baseline,
// x86-64-v3 = AVX2 + FMA, x86-64-v4 = AVX-512) and the loader picks the
// best one the CPU has, once, through an ifunc: no check per call.
//
//   template <typename T>
//   ORDO_SIMD_CLONES void add_rows(T* __restrict dst, const T* a, const T* b, int64_t n);
//
// The clones must round alike: GCC contracts a * b + c into one FMA when
// the target has it (even at -std=c++20), which the baseline clone cannot,
// so the files with clones are built with -ffp-contract=off
// (CMakeLists.txt, ORDO_HOT_SOURCES). An FMA written on purpose (a
// polynomial's Horner step) is fine only where every clone has it.
//
// Sanitized builds get one plain copy: the loader runs an ifunc resolver
// before the sanitizer's runtime is up, and an instrumented resolver
// crashes there (every TSan test binary did at start).
#pragma once

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__) && \
    !defined(__SANITIZE_ADDRESS__)
#define ORDO_SIMD_CLONES __attribute__((target_clones("default", "arch=x86-64-v3", "arch=x86-64-v4")))
#else
#define ORDO_SIMD_CLONES
#endif
