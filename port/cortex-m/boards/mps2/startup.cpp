// SPDX-License-Identifier: MIT
// Startup for the mps2 boards: vector table, reset handler, fault handlers.
//
// Reset: FPU on (hard-float builds), .data copied from flash, .bss zeroed, static constructors
// (init_array) run, main() called; main's return value becomes the semihosting exit code. The
// no-init RAM (.noinit, LOOPCANARY_BOARD_NOINIT) is left as the reset found it.
// Every exception without a handler of its own (the weak aliases below) and every fault prints
// its name and the faulting PC, then exits with 128 + the exception number, so a crashed test
// fails with a message instead of hanging.
#include <cstddef>
#include <cstdint>

#include "loopcanary/board.hpp"
#include "runtime.hpp"

using loopcanary::board::detail::write_hex_line;

// Linker script symbols (mps2.ld); the run-time start's are in port/boards/runtime.
extern "C" {
extern std::uint32_t __stack_top[];
extern const std::uint16_t __code_start[];
extern const std::uint16_t __code_end[];
}

namespace {

using Handler = void (*)();

volatile std::uint32_t& reg(std::uintptr_t address) noexcept {
  return *reinterpret_cast<volatile std::uint32_t*>(address);
}

constexpr std::uintptr_t kScbIcsr = 0xE000ED04;
constexpr std::uintptr_t kScbCfsr = 0xE000ED28;

}  // namespace

extern "C" {

// Reset: enable the FPU first (a hard-float build may use FP registers anywhere, even in
// memcpy), then C/C++ runtime setup. Naked: nothing may touch the stack before the FPU is on.
[[noreturn]] __attribute__((naked)) void Reset_Handler() {
#if defined(__ARM_FP)
  __asm__ volatile(
      "ldr r0, =0xE000ED88\n"  // SCB CPACR
      "ldr r1, [r0]\n"
      "orr r1, r1, #(0xF << 20)\n"  // CP10 and CP11: full access
      "str r1, [r0]\n"
      "dsb\n"
      "isb\n");
#endif
  __asm__ volatile(
      "ldr r0, =loopcanary_board_start\n"
      "bx r0\n"
      ".ltorg\n");
}

// Unhandled exceptions and faults: name the exception (IPSR) and the stacked PC, then exit.
// Used: reached only from Default_Handler's assembly.
[[gnu::used]] void loopcanary_board_fault(const std::uint32_t* frame, std::uint32_t exc_return) {
  std::uint32_t ipsr;
  __asm__ volatile("mrs %0, ipsr" : "=r"(ipsr));
  ipsr &= 0x1FFu;
  static const char* const kNames[] = {"thread", "reset", "nmi", "hard fault", "memmanage fault",
                                       "bus fault", "usage fault"};
  loopcanary::board::write("board: unhandled exception: ");
  loopcanary::board::write(ipsr < sizeof(kNames) / sizeof(kNames[0]) ? kNames[ipsr] : "interrupt");
  loopcanary::board::write("\n");
  write_hex_line("board: exception", ipsr);
  write_hex_line("board: stacked pc", frame[6]);
  write_hex_line("board: stacked lr", frame[5]);
  write_hex_line("board: exc_return", exc_return);
#if !defined(__ARM_ARCH_6M__)
  write_hex_line("board: cfsr", reg(kScbCfsr));
#endif
  write_hex_line("board: icsr", reg(kScbIcsr));
  loopcanary::board::exit(static_cast<int>(128u + (ipsr & 0x7Fu)));
}

// Entry of every default handler: the frame is on MSP or PSP (EXC_RETURN bit 2).
__attribute__((naked)) void Default_Handler() {
  __asm__ volatile(
      "movs r0, #4\n"
      "mov r1, lr\n"
      "tst r0, r1\n"
      "bne 1f\n"
      "mrs r0, msp\n"
      "b 2f\n"
      "1:\n"
      "mrs r0, psp\n"
      "2:\n"
      "ldr r2, =loopcanary_board_fault\n"
      "bx r2\n"
      ".ltorg\n");
}

void NMI_Handler() noexcept __attribute__((weak, alias("Default_Handler")));
void HardFault_Handler() noexcept __attribute__((weak, alias("Default_Handler")));
void MemManage_Handler() noexcept __attribute__((weak, alias("Default_Handler")));
void BusFault_Handler() noexcept __attribute__((weak, alias("Default_Handler")));
void UsageFault_Handler() noexcept __attribute__((weak, alias("Default_Handler")));
void SVC_Handler() noexcept __attribute__((weak, alias("Default_Handler")));
void DebugMon_Handler() noexcept __attribute__((weak, alias("Default_Handler")));
void PendSV_Handler() noexcept __attribute__((weak, alias("Default_Handler")));
void SysTick_Handler() noexcept __attribute__((weak, alias("Default_Handler")));
void Irq_Handler() noexcept __attribute__((weak, alias("Default_Handler")));

}  // extern "C"

namespace {

// The 16 system vectors and the 32 external interrupts of the MPS2 images (UARTs, timers,
// Ethernet, ...; all on Irq_Handler). Placed first in flash by the linker script (KEEP).
struct VectorTable {
  const void* initial_sp;
  Handler system[15];
  Handler irq[32];
};

#define LC_IRQ4 Irq_Handler, Irq_Handler, Irq_Handler, Irq_Handler
[[gnu::used, gnu::section(".vectors")]] const VectorTable kVectors = {
    __stack_top,
    {
        Reset_Handler, NMI_Handler, HardFault_Handler, MemManage_Handler, BusFault_Handler,
        UsageFault_Handler, nullptr, nullptr, nullptr, nullptr, SVC_Handler, DebugMon_Handler,
        nullptr, PendSV_Handler, SysTick_Handler,
    },
    {LC_IRQ4, LC_IRQ4, LC_IRQ4, LC_IRQ4, LC_IRQ4, LC_IRQ4, LC_IRQ4, LC_IRQ4},
};
#undef LC_IRQ4

}  // namespace

namespace loopcanary::board {

std::uintptr_t code_begin() noexcept { return reinterpret_cast<std::uintptr_t>(__code_start); }
std::uintptr_t code_end() noexcept { return reinterpret_cast<std::uintptr_t>(__code_end); }

}  // namespace loopcanary::board
