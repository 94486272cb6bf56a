// harness.h - what the tests, the bench and the fuzzers call that specdec itself never
// does: a model loaded for every position of its file, and freeing piece by piece (the
// program releases everything it owns at once: release_since, Appendix A). Include after
// specdec.c.
#ifndef SPECDEC_HARNESS_H
#define SPECDEC_HARNESS_H

#define DRAFT_WEIGHTS WEIGHTS_INT8 // specdec's draft, unless --draft-weights says otherwise
// the kernels this build runs (specdec.c's HAVE_*), for the reports' first lines
#if HAVE_NEON && defined(__ARM_FEATURE_DOTPROD)
#define SIMD_NAME "NEON + sdot"
#else
#define SIMD_NAME \
    (HAVE_VNNI ? "AVX-512 VNNI + AVX2" : HAVE_AVX512 ? "AVX-512 + AVX2" : HAVE_AVX2 ? "AVX2+FMA" : HAVE_NEON ? "NEON" : "plain C")
#endif

// A model for every position of the file's seq_len, quiet
static void build_transformer_as(Transformer *t, const char *path, int max_rows, ThreadPool *pool, int threads,
                                 int weights) {
    load_transformer(t, path, max_rows, pool, threads, weights, INT_MAX, 0);
}
static void build_transformer(Transformer *t, const char *path, int max_rows, ThreadPool *pool, int threads) {
    build_transformer_as(t, path, max_rows, pool, threads, WEIGHTS_F32);
}

static void free_transformer(Transformer *t) {
    xfree(t->state.x); // the run state's one block
    xfree(t->layers);
    xfree(t->packed);
    xfree(t->tables);
    t->packed = t->tables = NULL;
}

static void free_tokenizer(Tokenizer *t) {
    for (int i = 0; i < t->vocab_size; i++) xfree(t->vocab[i]);
    xfree(t->vocab);
    xfree(t->scores);
    xfree(t->sorted);
}

static void free_sampler(Sampler *s) { xfree(s->order); }

static void free_speculator(Speculator *sp) {
    xfree(sp->q);
    xfree(sp->p);
    xfree(sp->residual);
}

static void free_trees(Speculator *sp) { xfree(sp->trees); }

// What a drafter holds of its own: Medusa's and EAGLE's buffers (observe_hidden marks them); a draft
// model is freed as a model, lookup holds nothing
static void free_drafter(Drafter *d) {
    if (d->observe != observe_hidden) return;
    HiddenDrafter *h = (HiddenDrafter *)d;
    xfree(h->packed);
    xfree(h->z);
    xfree(h->logits);
    xfree(h->file);
}

static void free_pool(ThreadPool *pool) {
    if (!pool) return;
    release_resource(pool); // stops the workers
    xfree(pool->workers);
    xfree(pool->arrivals);
    xfree(pool);
}
#endif
