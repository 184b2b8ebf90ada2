// SPDX-License-Identifier: MIT
// The counting allocator of the no-allocation tests (noalloc_counter.hpp): every global
// allocation function of the process is replaced by one that counts the calls made inside a
// MeasuredSection and forwards to glibc's allocator. Link this file into a test executable
// (never into a library): the replacements then apply to the whole program.
#include "noalloc_counter.hpp"

#include <cerrno>
#include <cstdlib>
#include <new>

// glibc's own entry points: the replacements below forward to them.
extern "C" {
void* __libc_malloc(std::size_t size);
void* __libc_calloc(std::size_t count, std::size_t size);
void* __libc_realloc(void* pointer, std::size_t size);
void* __libc_memalign(std::size_t alignment, std::size_t size);
void __libc_free(void* pointer);
}

namespace noalloc {
// Constant-initialised (no constructor runs), so it is usable by allocations made before main.
AllocationCounter g_counter;

// Keeps a pointer observable so the compiler cannot remove the allocation that produced it.
void* volatile g_sink = nullptr;
void escape(void* p) noexcept { g_sink = p; }
}  // namespace noalloc

namespace {

using noalloc::g_counter;

void count_allocation() noexcept {
  if (g_counter.active.load(std::memory_order_relaxed)) g_counter.allocations.fetch_add(1, std::memory_order_relaxed);
}
void count_deallocation(const void* pointer) noexcept {
  if (pointer != nullptr && g_counter.active.load(std::memory_order_relaxed)) {
    g_counter.deallocations.fetch_add(1, std::memory_order_relaxed);
  }
}

void* allocate(std::size_t size) noexcept {
  count_allocation();
  return __libc_malloc(size != 0 ? size : 1);
}
void* allocate_aligned(std::size_t size, std::align_val_t alignment) noexcept {
  count_allocation();
  return __libc_memalign(static_cast<std::size_t>(alignment), size != 0 ? size : 1);
}
void release(void* pointer) noexcept {
  count_deallocation(pointer);
  __libc_free(pointer);
}

void* allocate_or_throw(std::size_t size) {
  void* p = allocate(size);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
void* allocate_aligned_or_throw(std::size_t size, std::align_val_t alignment) {
  void* p = allocate_aligned(size, alignment);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

}  // namespace

extern "C" {
void* malloc(std::size_t size) noexcept {
  count_allocation();
  return __libc_malloc(size);
}
void* calloc(std::size_t count, std::size_t size) noexcept {
  count_allocation();
  return __libc_calloc(count, size);
}
void* realloc(void* pointer, std::size_t size) noexcept {
  count_allocation();
  return __libc_realloc(pointer, size);
}
void* aligned_alloc(std::size_t alignment, std::size_t size) noexcept {
  count_allocation();
  return __libc_memalign(alignment, size);
}
int posix_memalign(void** out, std::size_t alignment, std::size_t size) noexcept {
  count_allocation();
  void* p = __libc_memalign(alignment, size);
  if (p == nullptr) return ENOMEM;
  *out = p;
  return 0;
}
void free(void* pointer) noexcept {
  count_deallocation(pointer);
  __libc_free(pointer);
}
}

void* operator new(std::size_t size) { return allocate_or_throw(size); }
void* operator new[](std::size_t size) { return allocate_or_throw(size); }
void* operator new(std::size_t size, const std::nothrow_t&) noexcept { return allocate(size); }
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept { return allocate(size); }
void* operator new(std::size_t size, std::align_val_t a) { return allocate_aligned_or_throw(size, a); }
void* operator new[](std::size_t size, std::align_val_t a) { return allocate_aligned_or_throw(size, a); }
void* operator new(std::size_t size, std::align_val_t a, const std::nothrow_t&) noexcept {
  return allocate_aligned(size, a);
}
void* operator new[](std::size_t size, std::align_val_t a, const std::nothrow_t&) noexcept {
  return allocate_aligned(size, a);
}
void operator delete(void* p) noexcept { release(p); }
void operator delete[](void* p) noexcept { release(p); }
void operator delete(void* p, std::size_t) noexcept { release(p); }
void operator delete[](void* p, std::size_t) noexcept { release(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { release(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { release(p); }
void operator delete(void* p, std::align_val_t) noexcept { release(p); }
void operator delete[](void* p, std::align_val_t) noexcept { release(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { release(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { release(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { release(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { release(p); }

