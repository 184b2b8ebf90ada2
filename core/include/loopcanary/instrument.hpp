// SPDX-License-Identifier: MIT
// Instrumentation: a monitor bound to a clock, RAII guards and macros that compile out.
//
//   constexpr loopcanary::Event kButton{"button"};
//   LOOPCANARY_DISPATCH(monitor, kButton);     // begin now, end at the closing brace
//   LOOPCANARY_SCOPE(monitor, "debounce");     // named scope on the loop's shadow stack
//   LOOPCANARY_STAGE(monitor, "output");       // the dispatch's next named stage starts now
//
//   LOOPCANARY_DRAIN(monitor, drain);          // a loop that drains its queue, back to back:
//   while (queue.pop(m)) {                     //   one clock read per dispatch, the last one
//     drain.next(kEvents[m.type]);             //   ended at the closing brace (or drain.end())
//     handle(m);
//   }
//
// With LOOPCANARY_ENABLED=0 the macros expand to nothing that runs, but still type-check
// their arguments, so instrumented code cannot rot while compiled out.
#pragma once

#include "loopcanary/compiler.hpp"
#include "loopcanary/event.hpp"
#include "loopcanary/monitor.hpp"

#include <cstddef>
#include <type_traits>
#include <utility>

namespace loopcanary {

namespace detail {
template <class Clock, class = void>
struct is_port_clock : std::false_type {};
template <class Clock>
struct is_port_clock<Clock, std::void_t<decltype(std::declval<const Clock&>().now())>>
    : std::is_same<decltype(std::declval<const Clock&>().now()), tick_t> {};
}  // namespace detail

/// A Monitor stamped by `Clock`, the port's hot-tier clock: any copyable type with
/// `tick_t now()` (static or const member). Hardware clocks are empty types; the sim clock is
/// a handle to its virtual time.
template <class Clock>
class ClockedMonitor : public Monitor {
  static_assert(detail::is_port_clock<Clock>::value,
                "loopcanary port: the hot-tier Clock must provide `tick_t now() const` "
                "(static or member) returning loopcanary::tick_t; see docs/porting.md");

 public:
  /// Constexpr when Clock is: a static monitor then costs no start-up code.
  constexpr explicit ClockedMonitor(Clock clock = Clock{}) noexcept : clock_(clock) {}

  /// begin_at(event, clock.now()). Loop context only.
  LOOPCANARY_INLINE void begin(const Event& event) noexcept { begin_at(event, clock_.now()); }
  /// begin_at(event, clock.now(), posted): also records the message's queue latency (health.hpp).
  /// Loop context only.
  LOOPCANARY_INLINE void begin(const Event& event, tick_t posted) noexcept {
    begin_at(event, clock_.now(), posted);
  }
  /// end_at(clock.now()). Loop context only.
  LOOPCANARY_INLINE void end() noexcept { end_at(clock_.now()); }
  /// next_at(event, clock.now()): ends the running dispatch and begins one of `event` with one
  /// clock read (back-to-back dispatch). Loop context only.
  LOOPCANARY_INLINE void next(const Event& event) noexcept { next_at(event, clock_.now()); }
  /// next_at(event, clock.now(), posted): also records the message's queue latency. Loop
  /// context only.
  LOOPCANARY_INLINE void next(const Event& event, tick_t posted) noexcept {
    next_at(event, clock_.now(), posted);
  }
  /// stage_at(name, clock.now()): stage `name` (static) of the running dispatch starts now.
  /// Loop context only.
  LOOPCANARY_INLINE void stage(const char* name) noexcept { stage_at(name, clock_.now()); }

  const Clock& clock() const noexcept { return clock_; }

 private:
  Clock clock_;
};

/// Begins a dispatch on construction and ends it on destruction. `M` is any ClockedMonitor.
template <class M>
class ScopedDispatch {
 public:
  LOOPCANARY_INLINE ScopedDispatch(M& monitor, const Event& event) noexcept : monitor_(monitor) {
    monitor_.begin(event);
  }
  LOOPCANARY_INLINE ~ScopedDispatch() { monitor_.end(); }
  ScopedDispatch(const ScopedDispatch&) = delete;
  ScopedDispatch& operator=(const ScopedDispatch&) = delete;

 private:
  M& monitor_;
};

/// Back-to-back dispatch for a loop that drains its queue: the first next() begins a dispatch,
/// each further next() ends the running one and begins the next with one clock read
/// (Monitor::next_at), and end() or the destructor ends the last one. Inside a running dispatch
/// (a handler that pumps the loop) its dispatches nest as begin()/end() would. `M` is any
/// ClockedMonitor. Loop context only.
template <class M>
class ScopedDrain {
 public:
  explicit ScopedDrain(M& monitor) noexcept : monitor_(monitor) {}
  /// Ends the running dispatch of this drain, if any, and begins one of `event`, now.
  LOOPCANARY_INLINE void next(const Event& event) noexcept {
    if (open_) {
      monitor_.next(event);
    } else {
      monitor_.begin(event);
      open_ = true;
    }
  }
  /// next(event) for a message posted at `posted` (port ticks): also records its queue latency.
  LOOPCANARY_INLINE void next(const Event& event, tick_t posted) noexcept {
    if (open_) {
      monitor_.next(event, posted);
    } else {
      monitor_.begin(event, posted);
      open_ = true;
    }
  }
  /// Ends the running dispatch of this drain now (before the loop waits for work); the next
  /// next() begins afresh. Nothing when none runs.
  LOOPCANARY_INLINE void end() noexcept {
    if (open_) {
      monitor_.end();
      open_ = false;
    }
  }
  LOOPCANARY_INLINE ~ScopedDrain() { end(); }
  ScopedDrain(const ScopedDrain&) = delete;
  ScopedDrain& operator=(const ScopedDrain&) = delete;

 private:
  M& monitor_;
  bool open_ = false;
};

/// Pushes a named scope on construction and pops it on destruction. `name` is static.
class NamedScope {
 public:
  LOOPCANARY_INLINE NamedScope(Monitor& monitor, const char* name) noexcept : monitor_(monitor) {
    monitor_.push_scope(name);
  }
  LOOPCANARY_INLINE ~NamedScope() { monitor_.pop_scope(); }
  NamedScope(const NamedScope&) = delete;
  NamedScope& operator=(const NamedScope&) = delete;

 private:
  Monitor& monitor_;
};

namespace detail {
// Declared only: used in unevaluated operands to type-check compiled-out macro arguments.
template <class M>
auto check_dispatch(M& monitor, const Event& event) -> decltype(monitor.begin(event), monitor.end(), char{});
char check_scope(Monitor& monitor, const char* name);
template <class M>
auto check_stage(M& monitor, const char* name) -> decltype(monitor.stage(name), char{});
template <class M>
auto check_drain(M& monitor) -> decltype(monitor.next(std::declval<const Event&>()), monitor.end(), char{});
// What LOOPCANARY_DRAIN declares with LOOPCANARY_ENABLED=0: its calls type-check and do nothing.
struct CompiledOutDrain {
  constexpr explicit CompiledOutDrain(std::size_t /*checked*/) noexcept {}
  void next(const Event&) noexcept {}
  void next(const Event&, tick_t) noexcept {}
  void end() noexcept {}
};
}  // namespace detail

}  // namespace loopcanary

#define LOOPCANARY_CONCAT_(a, b) a##b
#define LOOPCANARY_CONCAT(a, b) LOOPCANARY_CONCAT_(a, b)
#define LOOPCANARY_UNIQUE(prefix) LOOPCANARY_CONCAT(prefix, __LINE__)

#if LOOPCANARY_ENABLED
/// Stamps the rest of the enclosing block as one dispatch of `event` on `monitor`.
#define LOOPCANARY_DISPATCH(monitor, event) \
  ::loopcanary::ScopedDispatch LOOPCANARY_UNIQUE(loopcanary_dispatch_)((monitor), (event))
/// Names the rest of the enclosing block `name` (a string literal) on `monitor`'s scope stack.
#define LOOPCANARY_SCOPE(monitor, name) \
  ::loopcanary::NamedScope LOOPCANARY_UNIQUE(loopcanary_scope_)((monitor), (name))
/// Starts stage `name` (a string literal) of the running dispatch on `monitor` now; it lasts
/// until the next stage or the end of the dispatch. A statement, not a guard.
#define LOOPCANARY_STAGE(monitor, name) (monitor).stage(name)
/// Declares `drain`, a ScopedDrain on `monitor`: drain.next(event) stamps back-to-back
/// dispatches, the last one ending with drain.end() or at the closing brace.
#define LOOPCANARY_DRAIN(monitor, drain) ::loopcanary::ScopedDrain drain((monitor))
#else
#define LOOPCANARY_DISPATCH(monitor, event) \
  static_cast<void>(sizeof(::loopcanary::detail::check_dispatch((monitor), (event))))
#define LOOPCANARY_SCOPE(monitor, name) \
  static_cast<void>(sizeof(::loopcanary::detail::check_scope((monitor), (name))))
#define LOOPCANARY_STAGE(monitor, name) \
  static_cast<void>(sizeof(::loopcanary::detail::check_stage((monitor), (name))))
#define LOOPCANARY_DRAIN(monitor, drain) \
  [[maybe_unused]] ::loopcanary::detail::CompiledOutDrain drain(sizeof(::loopcanary::detail::check_drain((monitor))))
#endif
