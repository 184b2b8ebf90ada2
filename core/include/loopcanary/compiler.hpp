// SPDX-License-Identifier: MIT
// Compiler shims of the core: attributes spelled for gcc and clang, empty elsewhere. Not user
// options (those are in config.hpp).
#pragma once

/// Forces the hot path inline even at -Os, where compilers otherwise call it out of line
/// (on Cortex-M3 that alone costs ~20 instructions per begin+end pair).
#if defined(__GNUC__) || defined(__clang__)
#define LOOPCANARY_INLINE inline __attribute__((always_inline))
#else
#define LOOPCANARY_INLINE inline
#endif

/// Never inlined, for two uses. A header-defined helper that several cold paths call stays one
/// out-of-line copy (flash), where the compiler would otherwise inline it into each of them
/// (constant evaluation is unaffected). The hot path's rare exits stay out of begin/end even
/// under link-time optimisation, which would otherwise give the inline pair the registers and
/// the prologue those exits need (+2 instructions per pair on Cortex-M3 with -flto).
#if defined(__GNUC__) || defined(__clang__)
#define LOOPCANARY_NOINLINE __attribute__((noinline))
#else
#define LOOPCANARY_NOINLINE
#endif
