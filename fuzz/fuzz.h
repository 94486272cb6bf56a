// fuzz.h - what the libFuzzer targets share: specdec.c built with die()
// returning here (longjmp) instead of exiting, after it has released
// everything it owned; a small memory bound, so a header that asks for
// gigabytes is refused as it would be on a small machine.
#ifndef SPECDEC_FUZZ_H
#define SPECDEC_FUZZ_H
#define TESTING
#define SPECDEC_FUZZ
#define SPECDEC_MEMORY_LIMIT ((size_t)64 << 20)
#include "../specdec.c"
#include "../test/harness.h"

// Run body; a die() inside it lands back here. Returns 1 if it died.
#define FUZZ_TRY(...)                                                       \
    do {                                                                    \
        jmp_buf on_error_;                                                  \
        if (setjmp(on_error_) == 0) {                                       \
            fuzz_on_error = &on_error_;                                     \
            __VA_ARGS__;                                                    \
        }                                                                   \
        fuzz_on_error = NULL;                                               \
    } while (0)

// Nothing an input allocated may stay owned after it: a leak on any path is
// a bug. (What a target builds once, before its first input, is the baseline.)
static size_t owned_count(void) {
    size_t n = 0;
    for (Owned *o = owned.next; o != &owned; o = o->next) n++;
    return n;
}

static void fuzz_check_released(size_t baseline) {
    if (owned_count() != baseline) {
        fprintf(stderr, "fuzz: %zu allocations still owned after an input\n", owned_count() - baseline);
        abort();
    }
}
#endif
