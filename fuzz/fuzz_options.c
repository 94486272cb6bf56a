// fuzz_options.c - any bytes as a command line (arguments separated by '\n'):
// parse_options either accepts it, with every option in its documented range,
// or refuses it through die(). Built by `make fuzz`.
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *buf = malloc(size + 1), *argv[33] = {"specdec"}; // the harness's, not owned
    if (!buf) return 0;
    memcpy(buf, data, size);
    buf[size] = '\0';
    int argc = 1;
    for (char *p = buf; argc < 33 && p <= buf + size; argc++) {
        argv[argc] = p;
        char *nl = memchr(p, '\n', (size_t)(buf + size - p));
        if (!nl) { argc++; break; }
        *nl = '\0';
        p = nl + 1;
    }
    FUZZ_TRY({
        Options o;
        parse_options(&o, argc, argv);
        if (!o.help && (o.k < 0 || o.k > K_MAX || o.n_new < 0 || o.threads < 1 ||
                        o.threads > MAX_THREADS || o.draft_threads < 1 || o.draft_threads > o.threads ||
                        !(o.temperature == 0.0f || o.temperature >= 1e-6f) || !(o.top_p > 0.0f) ||
                        o.top_p > 1.0f || o.top_k < 0)) {
            fprintf(stderr, "fuzz_options: an option outside its range was accepted\n");
            abort();
        }
    });
    free(buf);
    fuzz_check_released(0);
    return 0;
}
