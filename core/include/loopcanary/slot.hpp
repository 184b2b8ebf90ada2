// SPDX-License-Identifier: MIT
// Slot: storage for one value that is not constructed until it is written.
//
// Ring slots and the report being built are written before they are ever read, so
// constructing them up front is wasted work: a StaticWatchdog's record ring holds several
// BlockRecords, whose default member initialisers would cost start-up code proportional to the
// ring (376 bytes of constructor on Cortex-M3). A slot costs nothing: its constructor is
// constexpr and touches no byte of the value, so a static object holding slots is constant-
// initialised to zero (.bss, no start-up code) and an automatic one is left as it is.
#pragma once

#include <type_traits>

namespace loopcanary::detail {

/// Uninitialised storage for one T. Writing `slot.value = x` starts the value's lifetime (T's
/// copy assignment is trivial), so T must be trivially copyable; reading before the first
/// write is a bug of the caller.
template <class T>
union Slot {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>,
                "Slot<T> needs a trivially copyable, trivially destructible T");
  // C++17 wants a constexpr constructor of a union to initialise one member: the empty one.
  constexpr Slot() noexcept : unset() {}
  struct Unset {};
  Unset unset;
  T value;
};

}  // namespace loopcanary::detail
