// SPDX-License-Identifier: MIT
#include "simrt/real_board.hpp"

#include <signal.h>

#include <cerrno>
#include <cstdio>

#include "loopcanary/port/linux.hpp"

namespace loopcanary::simrt {
namespace {

namespace lx = loopcanary::port_linux;

std::int64_t monotonic_ns() noexcept {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<std::int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

timespec timespec_of(std::int64_t ns) noexcept {
  timespec t{};
  t.tv_sec = static_cast<time_t>(ns / 1'000'000'000);
  t.tv_nsec = static_cast<long>(ns % 1'000'000'000);
  return t;
}

// Waits on `sem` until it is posted (true) or `deadline` passes (false). Signals (the
// watchdog's stack samples land on the loop thread) do not end the wait.
bool wait_posted(sem_t& sem, const timespec& deadline) noexcept {
  for (;;) {
    if (sem_clockwait(&sem, CLOCK_MONOTONIC, &deadline) == 0) return true;
    if (errno != EINTR) return false;  // ETIMEDOUT
  }
}

}  // namespace

RealBoard::~RealBoard() {
  finish();
  if (initialised_) {
    loop_thread_.detach();
    sem_destroy(&wake_);
  }
}

bool RealBoard::init(const port_linux::PlatformConfig& platform, char* message, std::size_t size) noexcept {
  if (initialised_) return true;
  lx::clock_info();  // selects the clock now, not at the first (signal-time) read
  lx::Result result = platform_.init(platform);
  if (result.ok()) result = loop_thread_.attach();
  if (!result.ok()) {
    lx::format(result, message, size);
    return false;
  }
  if (sem_init(&wake_, 0, 0) != 0) {
    std::snprintf(message, size, "sem_init failed (errno %d)", errno);
    loop_thread_.detach();
    return false;
  }
  initialised_ = true;
  return true;
}

std::uint32_t RealBoard::tick_hz() const noexcept { return lx::tick_hz(); }

const char* RealBoard::clock_name() const noexcept { return lx::clock_info().name; }

tick_t RealBoard::now() noexcept { return lx::Clock::now(); }

BoardError RealBoard::start_impl(const BoardStart& start) noexcept {
  if (!initialised_) return BoardError::platform_failed;
  start_ns_ = monotonic_ns();
  set_start(lx::Clock::now());

  lx::WatchdogThreadConfig thread_config;
  thread_config.period_us = start.poll_period_us;
  thread_config.after_poll = &RealBoard::after_poll;
  thread_config.after_poll_context = this;
  if (!watchdog_thread_.start(*start.watchdog, thread_config).ok()) return BoardError::thread_failed;

  // Peripheral threads take no signals: process-directed ones (Ctrl-C) go to the loop thread.
  sigset_t all;
  sigset_t previous;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &previous);
  BoardError error = BoardError::none;
  for (std::size_t i = 0; i < start.peripheral_count && error == BoardError::none; ++i) {
    PeripheralThread& p = peripherals_[i];
    p.board = this;
    p.index = i;
    p.timeline = Timeline(start.peripherals[i]);
    if (sem_init(&p.wake, 0, 0) != 0) {
      error = BoardError::thread_failed;
      break;
    }
    if (pthread_create(&p.thread, nullptr, &RealBoard::peripheral_main, &p) != 0) {
      sem_destroy(&p.wake);
      error = BoardError::thread_failed;
      break;
    }
    p.running = true;
    ++peripheral_count_;
  }
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  if (error != BoardError::none) {
    stop_peripherals();
    watchdog_thread_.stop();
  }
  return error;
}

// CPU work: the caller's step really runs until the time is up, so the signal-sampled program
// counters land in the caller's function.
bool RealBoard::compute_step(Burn& burn, CallerPc) noexcept {
  const tick_t now = lx::Clock::now();
  if (!burn.started) {
    burn.started = true;
    burn.clock = WideTicks(now);
    burn.end = burn.clock.value() + ticks_from_us(burn.us);
    return true;
  }
  return burn.clock.update(now) < burn.end;
}

void RealBoard::wait_impl(std::uint32_t us, CallerPc) noexcept {
  const timespec deadline = timespec_of(monotonic_ns() + static_cast<std::int64_t>(us) * 1000);
  // The sample signal interrupts the sleep (clock_nanosleep is never restarted): sleep on.
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &deadline, nullptr) == EINTR) {
  }
}

void RealBoard::acquire_impl(BusId bus, CallerPc) noexcept {
  if (bus < kMaxBuses) buses_[bus].lock();
}

void RealBoard::release(BusId bus) noexcept {
  if (bus < kMaxBuses) buses_[bus].unlock();
}

void RealBoard::idle_until(tick_t deadline) noexcept {
  const tick_t now = lx::Clock::now();
  if (!tick_before(now, deadline)) return;
  const std::uint64_t us = us_from_ticks(ticks_between(now, deadline));
  const timespec until = timespec_of(monotonic_ns() + static_cast<std::int64_t>(us) * 1000);
  if (sem_clockwait(&wake_, CLOCK_MONOTONIC, &until) == 0) {
    // Several interrupts may have posted: the loop drains every line before it idles again.
    while (sem_trywait(&wake_) == 0) {
    }
  }
}

void RealBoard::reset_hold(BusId bus) noexcept {
  if (bus >= kMaxBuses) return;
  const int holder = bus_holder_[bus].load(std::memory_order_acquire);
  if (holder == 0) return;
  reset_[bus].store(true, std::memory_order_release);
  sem_post(&peripherals_[holder - 1].wake);
}

void RealBoard::finish() noexcept {
  if (!started_ || finished_) return;
  finished_ = true;
  stop_peripherals();
  watchdog_thread_.stop();
  // This thread owns the watchdog now: the last poll (Watchdog::finish) finalises a block that
  // ended after the thread's last poll, and closes one still running; the consumer gets the rest.
  config_.watchdog->finish(lx::Clock::now());
  drain();
}

void* RealBoard::peripheral_main(void* self) noexcept {
  auto& p = *static_cast<PeripheralThread*>(self);
  // Named as its peripheral (cut to a thread name's 15 bytes), so a record of a loop waiting on
  // a bus it holds names it.
  char name[16] = {};
  const char* full = p.board->config_.peripherals[p.index].name;
  for (std::size_t i = 0; full != nullptr && i + 1 < sizeof name && full[i] != '\0'; ++i) name[i] = full[i];
  pthread_setname_np(pthread_self(), name);
  p.board->run_peripheral(p);
  return nullptr;
}

void RealBoard::after_poll(void* self) noexcept { static_cast<RealBoard*>(self)->drain(); }

void RealBoard::run_peripheral(PeripheralThread& p) noexcept {
  std::uint64_t at_us = 0;
  const Action* action = nullptr;
  while (p.timeline.peek(at_us, action)) {
    if (!sleep_until(p, at_us)) return;
    p.timeline.pop();
    if (action->kind == Action::Kind::raise) {
      config_.lines[action->target].raise(lx::Clock::now(), action->arg);
      sem_post(&wake_);
    } else {
      hold_bus(p, action->target, action->arg);
      p.timeline.skip_before(us_now());
    }
  }
}

// False when the board is stopping.
bool RealBoard::sleep_until(PeripheralThread& p, std::uint64_t at_us) noexcept {
  const timespec deadline = deadline_at(at_us);
  while (!stopping_.load(std::memory_order_acquire)) {
    if (!wait_posted(p.wake, deadline)) return !stopping_.load(std::memory_order_acquire);
    // Posted: a stop, or a stale reset meant for an earlier hold. Check and sleep on.
  }
  return false;
}

void RealBoard::hold_bus(PeripheralThread& p, BusId bus, std::uint32_t us) noexcept {
  std::lock_guard<std::mutex> lock(buses_[bus]);
  reset_[bus].store(false, std::memory_order_relaxed);
  bus_holder_[bus].store(static_cast<int>(p.index) + 1, std::memory_order_release);
  const timespec deadline = deadline_at(us_now() + us);
  while (!stopping_.load(std::memory_order_acquire) && !reset_[bus].load(std::memory_order_acquire)) {
    if (!wait_posted(p.wake, deadline)) break;
  }
  bus_holder_[bus].store(0, std::memory_order_release);
}

std::uint64_t RealBoard::us_now() const noexcept {
  return static_cast<std::uint64_t>((monotonic_ns() - start_ns_) / 1000);
}

timespec RealBoard::deadline_at(std::uint64_t at_us) const noexcept {
  return timespec_of(start_ns_ + static_cast<std::int64_t>(at_us) * 1000);
}

void RealBoard::stop_peripherals() noexcept {
  stopping_.store(true, std::memory_order_release);
  for (std::size_t i = 0; i < peripheral_count_; ++i) {
    PeripheralThread& p = peripherals_[i];
    if (!p.running) continue;
    sem_post(&p.wake);
    pthread_join(p.thread, nullptr);
    sem_destroy(&p.wake);
    p.running = false;
  }
}

}  // namespace loopcanary::simrt
