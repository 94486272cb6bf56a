// test_forward.c - the batched forward against sequential single-row forwards:
// logits and KV caches must be memcmp-identical (batch invariance), for n = 1..9
// rows at several positions, with grouped-query attention, shared and unshared
// classifiers, widths that are not multiples of 8 or 16, and on 1, 2 and 3
// threads (the thread count must not change a bit either).
// Prints a fingerprint of all logits so the Makefile can check that the AVX2
// and scalar builds agree bit for bit.
#define TESTING
#include "../specdec.c"
#include "harness.h"
#include "check.h"
#include "random_model.h"

static uint64_t fingerprint = 14695981039346656037ULL; // FNV-1a over logits bits

static void hash_floats(const float *v, size_t n) {
    const unsigned char *b = (const unsigned char *)v;
    for (size_t i = 0; i < n * sizeof(float); i++) fingerprint = (fingerprint ^ b[i]) * 1099511628211ULL;
}

// the cached key (or value) of layer l, kv head g at position p, dimension d
static float cached(const Transformer *tr, int value, int l, int g, int p, int d) {
    const Config *c = &tr->config;
    int hs = c->dim / c->n_heads;
    size_t head = (size_t)l * c->n_kv_heads + (size_t)g;
    if (value) return tr->state.value_cache[(head * c->seq_len + (size_t)p) * hs + d];
    return tr->state.key_cache[(head * tr->state.seq_pad + (size_t)p / LANES * LANES) * hs +
                               (size_t)d * LANES + p % LANES];
}

// positions [0, n) of both caches equal in every layer and head
static int caches_equal(const Transformer *a, const Transformer *b, int n) {
    const Config *c = &a->config;
    int hs = c->dim / c->n_heads;
    for (int l = 0; l < c->n_layers; l++)
        for (int g = 0; g < c->n_kv_heads; g++)
            for (int p = 0; p < n; p++)
                for (int d = 0; d < hs; d++)
                    for (int v = 0; v < 2; v++) {
                        float x = cached(a, v, l, g, p, d), y = cached(b, v, l, g, p, d);
                        if (memcmp(&x, &y, sizeof(float))) return 0;
                    }
    return 1;
}

// every matrix of t read as a model past STREAMED_BYTES reads them (one-row
// matmuls one panel wide), whatever its size
static void mark_streamed(Transformer *t) {
    for (int l = 0; l < t->config.n_layers; l++) {
        Layer *ly = &t->layers[l];
        ly->qkv.streamed = ly->wo.streamed = ly->w13.streamed = ly->w2.streamed = 1;
    }
    t->wcls.streamed = 1;
}

// weights: how the model keeps its matrices (WEIGHTS_F32 or WEIGHTS_INT8)
static void test_config(const char *name, Config c, int shared, int weights) {
    char path[256];
    snprintf(path, sizeof(path), "build/test/forward_%s.bin", name);
    write_random_checkpoint(path, &c, shared, 11, 0, 0);
    Transformer one, many;
    build_transformer_as(&one, path, MAX_ROWS, NULL, 1, weights);
    int S = c.seq_len, V = c.vocab_size;
    int *tokens = xmalloc((size_t)S * sizeof(int), "tokens");
    Stream r;
    stream_seed(&r, 5);
    for (int i = 0; i < S; i++) tokens[i] = (int)(rng_u32(&r) % (uint32_t)V);

    // reference: one row at a time, every position, one thread
    float *ref = xmalloc((size_t)S * V * sizeof(float), "ref logits");
    for (int i = 0; i < S; i++) memcpy(ref + (size_t)i * V, forward(&one, tokens + i, 1, i), (size_t)V * 4);
    hash_floats(ref, (size_t)S * V);

    int positions[] = {0, 3, 17, S - 9};
    int bad_logits = 0, bad_cache = 0, cases = 0;
    for (int threads = 1; threads <= 3; threads++) {
        ThreadPool *pool = build_pool(threads);
        build_transformer_as(&many, path, MAX_ROWS, pool, threads, weights);
        if (threads == 2) mark_streamed(&many);
        for (int pi = 0; pi < 4; pi++) {
            for (int n = 1; n <= 9; n++) {
                int pos = positions[pi];
                if (pos > 0) forward_chunked(&many, tokens, pos, 0); // prefill in chunks of 17
                float *lg = forward(&many, tokens + pos, n, pos);
                cases++;
                if (memcmp(lg, ref + (size_t)pos * V, (size_t)n * V * 4)) {
                    bad_logits++;
                    printf("  %s: %d rows at pos %d on %d threads differ from single-row logits\n",
                           name, n, pos, threads);
                }
                bad_cache += !caches_equal(&many, &one, pos + n);
            }
        }
        free_transformer(&many);
        free_pool(pool);
    }
    CHECK(bad_logits == 0, "%s: %d of %d batched forwards differ from single-row forwards", name, bad_logits, cases);
    CHECK(bad_cache == 0, "%s: %d of %d batched forwards left different KV caches", name, bad_cache, cases);
    printf("%s, %s weights (dim %d hidden %d layers %d heads %d kv_heads %d vocab %d, %s classifier): "
           "%d batched forwards (n = 1..9 at pos 0, 3, 17, %d; 1, 2 (as a streamed model), 3 threads) "
           "memcmp-equal to single rows on one thread\n", name, WEIGHTS_NAME[weights], c.dim, c.hidden_dim, c.n_layers, c.n_heads,
           c.n_kv_heads, c.vocab_size, shared ? "shared" : "unshared", cases, S - 9);
    xfree(ref); xfree(tokens);
    free_transformer(&one);
}

// Tree attention: for random trees (any shape, up to TREE_MAX rows), every
// row's logits from ONE forward_tree, or from two passes (the second's nodes
// attending to the first's), equal, bit for bit, a plain forward over the
// context and that row's path; after commit_path of a random row's path
// the caches equal those of the plain forward over it. 1..3 threads.
static void test_trees(const char *name, int weights) {
    char path[256];
    snprintf(path, sizeof(path), "build/test/forward_%s.bin", name);
    Transformer one;
    build_transformer_as(&one, path, TREE_MAX, NULL, 1, weights);
    int V = one.config.vocab_size, S = one.config.seq_len, ctx[128], bad = 0, bad_cache = 0, cases = 0;
    Stream r;
    stream_seed(&r, 17);
    for (int i = 0; i < 128; i++) ctx[i] = (int)(rng_u32(&r) % (uint32_t)V);
    for (int threads = 1; threads <= 3; threads++) {
        ThreadPool *pool = build_pool(threads);
        Transformer many;
        build_transformer_as(&many, path, TREE_MAX, pool, threads, weights);
        float *kv = xmalloc(node_kv_floats(&many) * sizeof(float), "node keys and values");
        for (int trial = 0; trial < 6; trial++, cases++) {
            int T = 1 + (int)(rng_u32(&r) % TREE_MAX), pos = (int)(rng_u32(&r) % (uint32_t)(S - T - 1));
            int tok[TREE_MAX], parent[TREE_MAX], depth[TREE_MAX], chain[TREE_MAX], path_rows[TREE_MAX];
            for (int i = 0; i < T; i++) {
                tok[i] = (int)(rng_u32(&r) % (uint32_t)V);
                parent[i] = i == 0 ? -1 : (int)(rng_u32(&r) % (uint32_t)(i + 1)) - 1;
                depth[i] = parent[i] < 0 ? 0 : depth[parent[i]] + 1;
            }
            forward_chunked(&many, ctx, pos, 0);
            float *lg = forward_tree(&many, kv, tok, 0, parent, T, pos);
            forward_chunked(&one, ctx, pos, 0);
            for (int i = 0; i < T; i++) { // the plain forward over row i's path
                for (int u = i; u >= 0; u = parent[u]) chain[depth[u]] = tok[u];
                float *ref = forward(&one, chain, depth[i] + 1, pos);
                bad += memcmp(lg + (size_t)i * V, ref + (size_t)depth[i] * V, (size_t)V * 4) != 0;
            }
            int half = T / 2; // the same tree in two passes, as the draft grows one: the second half's rows
            if (half > 0) {
                forward_chunked(&many, ctx, pos, 0);
                forward_tree(&many, kv, tok, 0, parent, half, pos);
                lg = forward_tree(&many, kv, tok + half, half, parent, T - half, pos);
                for (int i = half; i < T; i++) {
                    for (int u = i; u >= 0; u = parent[u]) chain[depth[u]] = tok[u];
                    float *ref = forward(&one, chain, depth[i] + 1, pos);
                    bad += memcmp(lg + (size_t)(i - half) * V, ref + (size_t)depth[i] * V, (size_t)V * 4) != 0;
                }
            }
            int last = T - 1; // commit row `last`'s path, then compare with the plain forward over it
            for (int u = last; u >= 0; u = parent[u]) path_rows[depth[u]] = u, chain[depth[u]] = tok[u];
            commit_path(&many, kv, path_rows, depth[last] + 1, pos);
            forward(&one, chain, depth[last] + 1, pos);
            bad_cache += !caches_equal(&many, &one, pos + depth[last] + 1);
        }
        xfree(kv);
        free_transformer(&many);
        free_pool(pool);
    }
    CHECK(bad == 0 && bad_cache == 0, "%s trees: %d rows differ from plain forwards over their paths, "
          "%d committed caches differ", name, bad, bad_cache);
    printf("%s, %s weights: %d random trees of 1..%d rows on 1..3 threads: every row's logits equal a plain "
           "forward over its path; committed paths leave the plain caches\n", name, WEIGHTS_NAME[weights],
           cases, TREE_MAX);
    free_transformer(&one);
}

// the bench's emulated large target: extra layers with zero wo and w2 leave
// the logits bit for bit unchanged
static void test_emulated(void) {
    Transformer base, big;
    build_transformer(&base, "build/test/forward_gqa_unshared.bin", MAX_ROWS, NULL, 1);
    write_emulated_checkpoint("build/test/forward_emulated.bin", &base, 5);
    build_transformer(&big, "build/test/forward_emulated.bin", MAX_ROWS, NULL, 1);
    int tokens[12] = {1, 5, 9, 40, 41, 42, 7, 8, 100, 200, 250, 3}, V = base.config.vocab_size;
    float *a = forward(&base, tokens, 12, 0), *b = forward(&big, tokens, 12, 0);
    CHECK(big.config.n_layers == base.config.n_layers + 5 && !memcmp(a, b, (size_t)12 * V * 4),
          "emulated target (+5 zero-output layers): logits differ from the base model's");
    printf("emulated target: %d + 5 layers with wo = w2 = 0 give the base model's logits bit for bit\n",
           base.config.n_layers);
    free_transformer(&base);
    free_transformer(&big);
}

// A checkpoint truncated (or rewritten, as `make weights` does) under a loaded
// model: nothing is mapped, so the model decodes on with the same logits
// (issue 30: it used to die of SIGBUS reading the embedding from the mapping).
static void test_file_changed_after_load(void) {
    const char *live = "build/test/forward_live.bin";
    Transformer base, tr;
    build_transformer(&base, "build/test/forward_gqa_unshared.bin", MAX_ROWS, NULL, 1);
    write_emulated_checkpoint(live, &base, 0);
    build_transformer(&tr, live, MAX_ROWS, NULL, 1);
    FILE *maps = fopen("/proc/self/maps", "r");
    char line[4096];
    int mapped = 0;
    while (maps && fgets(line, sizeof line, maps)) mapped |= strstr(line, "forward_live.bin") != NULL;
    if (maps) fclose(maps);
    CHECK(!mapped, "%s is mapped after load; a change to the file would reach the running model", live);
    CHECK(truncate(live, 0) == 0, "cannot truncate %s", live);
    int tokens[4] = {1, 5, 9, 40}, V = base.config.vocab_size;
    float *a = forward(&base, tokens, 4, 0), *b = forward(&tr, tokens, 4, 0);
    CHECK(!memcmp(a, b, (size_t)4 * V * 4), "logits after the file was truncated differ");
    printf("a checkpoint truncated after load: not mapped, the same logits\n");
    free_transformer(&base);
    free_transformer(&tr);
}

// Stalled passes (a thread waited past POOL_STALL) that come alone or in
// twos are the machine's hiccups: nothing changes. A third within STALL_WINDOW
// (50 ms) of two others, or a third stalled pass in a row (another process
// holds a core) sends the next 64 passes to one thread; a stall-free pass on
// all threads halves the run. The rule on a scripted sequence of passes and
// times, then the passes it sends to one thread: the same logits.
static void test_stall_goes_solo(void) {
    ThreadPool *pool = build_pool(2);
    Transformer tr;
    build_transformer(&tr, "build/test/forward_gqa_unshared.bin", MAX_ROWS, pool, 2);
    fresh_pool(pool); // the load's passes forgotten
    pool->look = 0;   // and no look_around: the scripted passes alone decide
    note_stall(pool, 2, 1, 10.000);
    int after_one = pool->solo_left;
    note_stall(pool, 2, 1, 10.010);
    int after_two = pool->solo_left;
    note_stall(pool, 2, 0, 10.050);
    note_stall(pool, 2, 1, 10.100); // the third, 100 ms after the first
    int after_far = pool->solo_left;
    note_stall(pool, 2, 0, 10.110);
    note_stall(pool, 2, 1, 10.120);
    note_stall(pool, 2, 1, 10.130); // three within 30 ms
    int after_three = pool->solo_left;
    note_stall(pool, 1, 0, 10.140); // a pass on one thread tells nothing
    int kept = pool->solo_run;
    note_stall(pool, 2, 0, 10.150);
    int halved = pool->solo_run;
    pool->solo_left = 0;
    for (int i = 0; i < 3; i++) note_stall(pool, 2, 1, 11.0 + 0.1 * i); // long passes, every one stalled
    CHECK(after_one == 0 && after_two == 0 && after_far == 0 && after_three == 64 && kept == 64 && halved == 32 &&
          pool->solo_left == 64,
          "stalls: one sent %d passes to one thread (want 0), a second 10 ms later %d (want 0), a third 100 ms "
          "after the first %d (want 0), three within 30 ms %d (want 64), the run after a solo pass %d (want 64), "
          "after a quiet pass %d (want 32), three stalled passes in a row 100 ms apart %d (want 64)", after_one,
          after_two, after_far, after_three, kept, halved, pool->solo_left);
    int tokens[3] = {1, 5, 9}, V = tr.config.vocab_size, same = 1;
    float *ref = xmalloc((size_t)3 * V * 4, "ref");
    memcpy(ref, forward(&tr, tokens, 3, 0), (size_t)3 * V * 4);
    pool->solo_left = 4;
    for (int i = 0; i < 4; i++) same &= !memcmp(forward(&tr, tokens, 3, 0), ref, (size_t)3 * V * 4);
    CHECK(same && pool->solo_left == 0, "passes sent to one thread: same logits %d, %d left (want 0)", same, pool->solo_left);
    printf("stalled passes alone or in twos change nothing; three within 50 ms, or three in a row, send the "
           "next 64 to one thread, with the same logits; a quiet pass halves the run\n");
    // which passes stalled (stalled_pass): waits past POOL_STALL over a quarter of the thread-time
    int hiccup = stalled_pass(0.002, 2, 0.055), preempted = stalled_pass(0.004, 2, 0.005);
    int quarter = stalled_pass(0.026, 2, 0.05), none = stalled_pass(0, 2, 0.001);
    CHECK(!hiccup && preempted && quarter && !none,
          "stalled_pass: a 2 ms wait in a 55 ms pass %d (want 0), 4 ms in a 5 ms pass %d (want 1), 26 ms in a 50 ms "
          "pass on 2 threads %d (want 1), none %d (want 0)", hiccup, preempted, quarter, none);
    printf("a 2 ms wait in a 55 ms pass on 2 threads is a hiccup, not a stall; 4 ms in a 5 ms pass is one\n");
    xfree(ref);
    free_transformer(&tr);
    free_pool(pool);
}

// A thread that waits on one that is not running sleeps (pool_wait) and wakes when it
// arrives. A job whose threads take turns arriving 1 ms late (far past POOL_SPIN) at a
// barrier, each checking every thread's slot after it: nothing passes early, and the
// waiters block (voluntary context switches beyond the late threads' own sleeps; a
// spinning or yielding waiter makes none). Then more threads than CPUs (pinned to one,
// every pass kept on all threads): the same logits as one thread, and it terminates
// (alarm: a lost wake-up fails the test instead of hanging it).
#include <sys/resource.h>
#define LATE_ROUNDS 20
typedef struct { atomic_int slot[3], wrong; ThreadPool *pool; } LateJob;
static void late_job(void *arg, int tid, int n) {
    LateJob *j = arg;
    for (int r = 1; r <= LATE_ROUNDS; r++) {
        if (r % n == tid) nanosleep(&(struct timespec){0, 1000000}, NULL);
        atomic_store(&j->slot[tid], r);
        pool_barrier(j->pool, tid, n);
        for (int i = 0; i < n; i++) atomic_fetch_add(&j->wrong, atomic_load(&j->slot[i]) != r);
        pool_barrier(j->pool, tid, n); // no slot changes before every thread has read them all
    }
}

static long voluntary_switches(void) {
    struct rusage u;
    return getrusage(RUSAGE_SELF, &u) == 0 ? u.ru_nvcsw : 0;
}

static void test_pool_sleeps(void) {
    alarm(120);
    LateJob j = {.pool = build_pool(3)};
    j.pool->look = 0; // on all threads however busy the machine is (look_around)
    long before = voluntary_switches();
    pool_run(j.pool, 3, late_job, &j);
    long slept = voluntary_switches() - before - LATE_ROUNDS; // less the late threads' sleeps
    CHECK(atomic_load(&j.wrong) == 0 && slept >= LATE_ROUNDS,
          "a thread late at a barrier in each of %d rounds: %d slots read before their thread arrived (want 0), "
          "%ld voluntary context switches beyond the late threads' (want >= %d: the waiters sleep)",
          LATE_ROUNDS, atomic_load(&j.wrong), slept, LATE_ROUNDS);
    free_pool(j.pool);
    int pinned = 0;
#if defined(__linux__) && defined(SYS_sched_getaffinity)
    unsigned long all[64] = {0}, one[64] = {0};
    int w = 0;
    pinned = syscall(SYS_sched_getaffinity, 0, sizeof all, all) > 0;
    while (w < 63 && !all[w]) w++;
    one[w] = all[w] & -all[w]; // its lowest CPU: the pool's threads inherit the mask
    pinned = pinned && syscall(SYS_sched_setaffinity, 0, sizeof one, one) == 0;
#endif
    Transformer a, b;
    ThreadPool *pool = build_pool(4);
    build_transformer(&a, "build/test/forward_mha_shared.bin", MAX_ROWS, NULL, 1);
    build_transformer(&b, "build/test/forward_mha_shared.bin", MAX_ROWS, pool, 4);
    int tokens[40], V = a.config.vocab_size, bad = 0;
    for (int i = 0; i < 40; i++) tokens[i] = (i * 53 + 7) % V;
    for (int pos = 0; pos < 40; pos += 5) {
        pool->solo_left = 0; // no pass sent to one thread: every one oversubscribed
        float *la = forward(&a, tokens + pos, 5, pos), *lb = forward(&b, tokens + pos, 5, pos);
        bad += memcmp(la, lb, (size_t)5 * V * sizeof(float)) != 0;
    }
    free_transformer(&a);
    free_transformer(&b);
    free_pool(pool);
#if defined(__linux__) && defined(SYS_sched_getaffinity)
    CHECK(!pinned || syscall(SYS_sched_setaffinity, 0, sizeof all, all) == 0, "cannot restore the affinity mask");
#endif
    alarm(0);
    CHECK(bad == 0, "4 threads%s: %d of 8 five-row passes differ from one thread's logits", pinned ? " on one CPU" : "", bad);
    printf("threads late at barriers: nothing passes early, the waiters sleep; 4 threads%s: one thread's logits\n",
           pinned ? " pinned to one CPU" : "");
}

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    CHECK(f && fputs(text, f) >= 0 && fclose(f) == 0, "cannot write %s", path);
}

// the default thread count: the affinity mask, the quotas Linux writes, and a count within bounds
static void test_cpu_count(void) {
    int pinned = 1, allowed = affinity_cpus();
#if defined(__linux__) && defined(SYS_sched_getaffinity)
    // pinned to the first CPU it may use (as by taskset), the process may use 1
    unsigned long all[64] = {0}, one[64] = {0};
    long bytes = syscall(SYS_sched_getaffinity, 0, sizeof all, all);
    int w = 0;
    while (w < 63 && !all[w]) w++;
    one[w] = all[w] & -all[w]; // its lowest CPU
    CHECK(bytes > 0 && allowed >= 1 && syscall(SYS_sched_setaffinity, 0, sizeof one, one) == 0,
          "sched_getaffinity: %ld bytes, %d CPUs; pinning to one failed", bytes, allowed);
    pinned = affinity_cpus() == 1 ? usable_cpus() : -1;
    CHECK(syscall(SYS_sched_setaffinity, 0, sizeof all, all) == 0 && affinity_cpus() == allowed,
          "cannot restore the affinity mask");
#endif
    CHECK(pinned == 1, "usable_cpus() pinned to one CPU = %d, want 1", pinned);
    // CPU quotas in a fake cgroup tree under build/test/cg: v2 with the tighter
    // quota on a parent, v1's cpu controller seen from inside a container, none
    struct { const char *self, *files[3][2]; int n; } q[] = {
        {"0::/user.slice/app\n", {{"user.slice/app/cpu.max", "max 100000\n"},
                                  {"user.slice/cpu.max", "150000 100000\n"}, {"cpu.max", "400000 100000\n"}}, 2},
        {"5:memory:/docker/x\n4:cpuacct,cpu:/docker/x\n", {{"cpu/cpu.cfs_quota_us", "300000\n"},
                                                          {"cpu/cpu.cfs_period_us", "100000\n"}, {NULL, NULL}}, 3},
        {"4:cpu,cpuacct:/\n0::/\n", {{"cpu/cpu.cfs_quota_us", "-1\n"}, {"cpu/cpu.cfs_period_us", "100000\n"},
                                     {"cpu.max", "max 100000\n"}}, 0},
    };
    for (size_t i = 0; i < sizeof(q) / sizeof(q[0]); i++) {
        char root[64], path[256];
        snprintf(root, sizeof root, "build/test/cg%zu", i);
        const char *dirs[] = {"", "/user.slice", "/user.slice/app", "/cpu"};
        for (int d = 0; d < 4; d++) {
            snprintf(path, sizeof path, "%s%s", root, dirs[d]);
            CHECK(mkdir(path, 0755) == 0 || errno == EEXIST, "mkdir %s: %s", path, strerror(errno));
        }
        snprintf(path, sizeof path, "%s/self", root);
        write_text(path, q[i].self);
        for (int f = 0; f < 3 && q[i].files[f][0]; f++) {
            snprintf(path, sizeof path, "%s/%s", root, q[i].files[f][0]);
            write_text(path, q[i].files[f][1]);
        }
        snprintf(path, sizeof path, "%s/self", root);
        int got = (int)cgroup_limit(root, path, "cpu", quota_in);
        CHECK(got == q[i].n, "cgroup cpu quota (%s) = %d, expected %d", root, got, q[i].n);
    }
    CHECK(cgroup_limit("build/test/cg0", "build/test/cg0/absent", "cpu", quota_in) == 0, "cpu quota without a cgroup list");
    // the memory limit: cgroup v2's memory.max ("max": none), the tightest of the path's
    // directories; v1's memory.limit_in_bytes under root/memory
    mkdir("build/test/cgm", 0755), mkdir("build/test/cgm/a", 0755), mkdir("build/test/cgm/a/b", 0755);
    mkdir("build/test/cgm/memory", 0755), mkdir("build/test/cgm/memory/d", 0755);
    write_text("build/test/cgm/self", "0::/a/b\n");
    write_text("build/test/cgm/a/b/memory.max", "max\n");
    write_text("build/test/cgm/a/memory.max", "3000000000\n");
    write_text("build/test/cgm/memory.max", "8000000000\n");
    double mem = cgroup_limit("build/test/cgm", "build/test/cgm/self", "memory", memory_max_in);
    CHECK(mem == 3e9, "cgroup v2 memory.max: %.0f, expected the parent's 3000000000", mem);
    write_text("build/test/cgm/self1", "4:memory:/d\n3:cpu:/\n");
    write_text("build/test/cgm/memory/d/memory.limit_in_bytes", "2000000000\n");
    mem = cgroup_limit("build/test/cgm", "build/test/cgm/self1", "memory", memory_max_in);
    CHECK(mem == 2e9, "cgroup v1 memory.limit_in_bytes: %.0f, expected 2000000000", mem);
    CHECK(memory_limit() > 0 && memory_limit() < SIZE_MAX, "memory_limit() = %zu", memory_limit());
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    int n = usable_cpus();
    CHECK(n >= 1 && n <= MAX_THREADS && n <= (online > 0 ? online : 1), "usable_cpus() = %d, online %ld", n, online);
    printf("cpu count: pinned to one CPU, 1; cgroup v2 and v1 quotas read from a fake tree; "
           "this process may use %d of %ld online CPUs (%d in its affinity mask)\n", n, online, allowed);
}

// A version-2 file (the image q80_export makes of an f32 checkpoint, written
// out) gives, bit for bit, that checkpoint's logits quantised at load
// (WEIGHTS_INT8), whatever option it is loaded with
static void test_q80_file(const char *name) {
    char path[256], v2[256];
    snprintf(path, sizeof(path), "build/test/forward_%s.bin", name);
    snprintf(v2, sizeof(v2), "build/test/forward_%s_q80.bin", name);
    Transformer a, b;
    build_transformer_as(&a, path, MAX_ROWS, NULL, 1, WEIGHTS_INT8);
    write_q80_checkpoint(path, v2);
    build_transformer_as(&b, v2, MAX_ROWS, NULL, 1, WEIGHTS_F32);
    int V = a.config.vocab_size, bad = 0, tok[24];
    for (int i = 0; i < 24; i++) tok[i] = (i * 37 + 5) % V;
    for (int i = 0; i < 24; i++) {
        float *la = forward(&a, tok + i, 1, i);
        bad += memcmp(la, forward(&b, tok + i, 1, i), (size_t)V * sizeof(float)) != 0;
    }
    CHECK(b.gs == a.gs && bad == 0, "%s: its version-2 file (groups of %d) differs at %d of 24 positions", name, b.gs, bad);
    printf("%s: the version-2 file (groups of %d) gives the bits of the f32 file quantised at load (24 positions)\n",
           name, b.gs);
    free_transformer(&a);
    free_transformer(&b);
}

int main(void) {
    printf("batched forward vs single rows (%s path)\n", SIMD_NAME);
    test_cpu_count();
    test_config("gqa_unshared", (Config){48, 100, 2, 6, 2, 300, 64}, 0, WEIGHTS_F32);
    test_config("mha_shared", (Config){64, 172, 3, 4, 4, 400, 80}, 1, WEIGHTS_F32);
    test_config("odd_widths", (Config){36, 52, 1, 3, 1, 260, 40}, 1, WEIGHTS_F32);
    test_config("wide_heads", (Config){128, 200, 2, 2, 1, 272, 48}, 1, WEIGHTS_F32);
    // int8 weights (groups of 4, 64): batch and thread invariance hold for them too, and the
    // fingerprint carries their logits into the builds' comparison
    test_config("gqa_unshared", (Config){48, 100, 2, 6, 2, 300, 64}, 0, WEIGHTS_INT8);
    test_config("odd_widths", (Config){36, 52, 1, 3, 1, 260, 40}, 1, WEIGHTS_INT8);
    test_config("groups64", (Config){64, 192, 2, 4, 2, 300, 64}, 0, WEIGHTS_INT8); // groups of 64
    test_q80_file("groups64");
    test_q80_file("mha_shared");
    test_trees("gqa_unshared", WEIGHTS_F32);
    test_trees("mha_shared", WEIGHTS_F32);
    test_trees("odd_widths", WEIGHTS_INT8);
    test_emulated();
    test_file_changed_after_load();
    test_stall_goes_solo();
    test_pool_sleeps();
    printf("logits fingerprint: %016llx\n", (unsigned long long)fingerprint);
    return check_summary("test_forward");
}
