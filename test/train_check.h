// train_check.h - the check() both trainer tests use: print every comparison
// ("ok" or "FAIL" and what was compared), count them, and end with the line every
// specdec test ends with (check.h's): "name: N passed, N failed".
#ifndef TRAIN_CHECK_H
#define TRAIN_CHECK_H
#include <stdarg.h>
#include <stdio.h>

static int failures = 0, passes = 0;

static void check(int ok, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    printf("%s ", ok ? "ok  " : "FAIL");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    failures += !ok;
    passes += !!ok;
}

static int check_exit(const char *name) {
    printf("%s: %d passed, %d failed\n", name, passes, failures);
    return failures != 0;
}
#endif
