// Which sanitizer this build runs under, and what it must be told: empty in
// other builds. For code whose memory the sanitizers cannot see by
// themselves, and tests whose bounds they change (shadow memory, quarantine).
#pragma once

#include <cstddef>

#if defined(__SANITIZE_ADDRESS__)
#define STRATA_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define STRATA_ASAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define STRATA_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define STRATA_TSAN 1
#endif
#endif

#ifdef STRATA_ASAN
#include <sanitizer/asan_interface.h>
#endif

namespace strata {

#ifdef STRATA_ASAN
inline constexpr bool kAddressSanitizer = true;
#else
inline constexpr bool kAddressSanitizer = false;
#endif
#ifdef STRATA_TSAN
inline constexpr bool kThreadSanitizer = true;
#else
inline constexpr bool kThreadSanitizer = false;
#endif

// Memory fresh from mmap is addressable. ASan (LLVM 14) does not clear the
// shadow of an unmapped range, so a new mapping there can inherit the poison
// of what it held before: in a forked child, glibc unmaps the stacks of its
// parent's threads for reuse with their stack frames' redzones still poisoned.
inline void MarkMapped([[maybe_unused]] void* p, [[maybe_unused]] size_t n) {
#ifdef STRATA_ASAN
  ASAN_UNPOISON_MEMORY_REGION(p, n);
#endif
}

}  // namespace strata
