// check.h - the few lines every specdec test shares: count checks, print what
// failed with what it compared, end with "name: N passed, N failed".
#ifndef SPECDEC_CHECK_H
#define SPECDEC_CHECK_H
#include <stdio.h>

static int checks_passed, checks_failed;

#define CHECK(cond, ...)                                                   \
    do {                                                                   \
        if (cond) checks_passed++;                                         \
        else {                                                             \
            checks_failed++;                                               \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                    \
            printf(__VA_ARGS__);                                           \
            printf("\n");                                                  \
        }                                                                  \
    } while (0)

static int check_summary(const char *name) {
    printf("%s: %d passed, %d failed\n", name, checks_passed, checks_failed);
    return checks_failed ? 1 : 0;
}
#endif
