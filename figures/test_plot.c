// test_plot.c - plot.c's pieces and figures: nice ticks, text (where the
// glyphs land, horizontal and turned upward, how much ink they leave), the CSV
// reader (columns by name, quotes, empty fields, short rows, CRLF and CR
// endings), the speedup formula, then every figure drawn from fixture CSVs it
// writes under build/test_plot/: each marker and bar must show its series'
// colour where the axes put it (so nothing, the legend included, covers data),
// and each written file must be a PNG of the right size; notes go beside
// their points where they hide nothing, and stay inside the plot. Ends with
// the error paths: missing file, missing column, bad number, `plot all` skipping.
// Run from the repository root (make test-plot).
#define _POSIX_C_SOURCE 200809L
#define TESTING
#include <sys/stat.h>
#include "plot.c"
#include "../test/check.h"

#define DIR "build/test_plot"

static int write_text(const char *path, const char *text) {
    FILE *fp = fopen(path, "wb");
    if (!fp) return -1;
    fputs(text, fp);
    return fclose(fp);
}

// ----------------------------------------------------------------------------
// Fixtures: small CSVs shaped like the ones specdec, bench and train write

// sweep_k.csv: T = 0 and 1, K = 1..8, per-position acceptance (pos1..pos9)
// and the accepted-proposals histogram (hist0..hist9: after 8 acceptances
// position 9 is proposed too) on the K = 8 rows only, whose tokens_per_round
// is the histogram's mean; columns in an unusual order, plus one the plotter
// does not know.
static int write_sweep_k(const char *path) {
    FILE *fp = fopen(path, "w");
    if (!fp) return -1;
    fprintf(fp, "k,temperature,notes,alpha,tokens_per_round,c,r,target_tok_s,spec_tok_s,speedup,"
                "predicted_speedup,pos1,pos2,pos3,pos4,pos5,pos6,pos7,pos8,pos9,"
                "hist0,hist1,hist2,hist3,hist4,hist5,hist6,hist7,hist8,hist9\n");
    for (int temp = 0; temp <= 1; temp++)
        for (int k = 1; k <= 8; k++) {
            double a = temp ? 0.65 : 0.8, c = 0.08, r = 1 + 0.03 * k;
            double pred = theory_speedup(a, k, c, r), meas = pred * (0.93 + 0.01 * (k % 3));
            int h[10];
            double rounds = 0, tokens = 0;
            for (int j = 0; j <= 9; j++) {
                h[j] = temp ? 300 - 25 * j : 60 + 10 * j + (j == 9) * 250;
                rounds += h[j];
                tokens += (j < 9 ? j + 1 : 9) * h[j];
            }
            fprintf(fp, "%d,%d,\"run %d, seed 1\",%.4f,%.4f,%.3f,%.3f,50.0,%.1f,%.4f,%.4f", k, temp,
                    k, a, k == 8 ? tokens / rounds : pred * (k * c + r), c, r, 50 * meas, meas, pred);
            for (int i = 1; i <= 9; i++) {
                if (k == 8) fprintf(fp, ",%.3f", (temp ? 0.72 : 0.88) - 0.015 * i);
                else fprintf(fp, ",");
            }
            for (int j = 0; j <= 9; j++) {
                if (k == 8) fprintf(fp, ",%d", h[j]);
                else fprintf(fp, ",");
            }
            fprintf(fp, "\n");
        }
    return fclose(fp);
}

static int write_sweep_temp(const char *path) {
    FILE *fp = fopen(path, "w");
    if (!fp) return -1;
    fprintf(fp, "temperature,k,alpha,tokens_per_round,speedup\n");
    for (int i = 0; i <= 6; i++)
        fprintf(fp, "%.2f,4,%.3f,%.3f,%.3f\n", 0.25 * i, 0.82 - 0.05 * i, 3.0 - 0.2 * i, 2.1 - 0.1 * i);
    return fclose(fp);
}

// A training log: train loss every 20 steps, validation every 200 steps
// (offset by val_offset, so the two models' markers do not sit on each other).
static int write_train(const char *path, double floor_loss, int val_offset) {
    FILE *fp = fopen(path, "w");
    if (!fp) return -1;
    fprintf(fp, "step,tokens,lr,train_loss,val_loss,seconds\n");
    for (int step = 0; step <= 2000; step += 20) {
        double loss = floor_loss + 6.3 * exp(-step / 300.0) + 0.05 * sin(step * 0.7);
        fprintf(fp, "%d,%d,0.0005,%.4f,", step, step * 16384, loss);
        if (step % 200 == val_offset) fprintf(fp, "%.4f", loss + 0.08);
        fprintf(fp, ",%.1f\n", step * 0.5);
    }
    return fclose(fp);
}

static int write_verify_cost(const char *path) {
    FILE *fp = fopen(path, "w");
    if (!fp) return -1;
    fprintf(fp, "model,n,r\n");
    for (int n = 1; n <= 9; n++) fprintf(fp, "shipped target,%d,%.3f\n", n, 1 + 0.04 * (n - 1));
    for (int n = 1; n <= 9; n++) fprintf(fp, "\"random 110M\",%d,%.3f\n", n, 1 + 0.12 * (n - 1));
    return fclose(fp);
}

// scale.csv: three sizes, runq.c on two of them (the third's 0: not measured)
static int write_scale(const char *path) {
    FILE *fp = fopen(path, "w");
    if (!fp) return -1;
    fprintf(fp, "shape,params,file_gb,bytes_per_token,threads,read_gbs,one_row_fraction,one_row_fraction_1,"
                "target_tok_s,spec_t0_k4,"
                "spec_t0_auto,auto_k_t0,spec_t1_k4,spec_t1_auto,auto_k_t1,auto_vs_k4_t0,auto_vs_k8_t0,auto_vs_k4_t1,"
                "auto_vs_k8_t1,first_token_s,cat_s,rss_target_gb,rss_spec_gb,runq_tok_s\n"
                "81M,81e6,0.086,86e6,2,22,0.9,0.95,240,600,700,6,500,520,5,1.05,1,1.1,1,0.08,0.02,0.09,0.1,20\n"
                "1.0B,1.04e9,1.1,1.1e9,2,21,0.9,0.95,18,55,60,8,45,48,8,1,1,1,1,0.5,0.2,1.1,1.1,6\n"
                "6.0B,5.95e9,6.3,6.3e9,2,20,0.9,0.95,3,9,10,8,7,8,8,0,0,0,0,6,1.3,6.5,6.6,0\n");
    return fclose(fp);
}

// lenience.csv: l = 1 (exact) down to 0.2, the rows out of order (the curve
// must still run in order of l), the measured distances beside the closed form.
static int write_lenience(const char *path) {
    static const double l[7] = {0.5, 1.0, 0.2, 0.9, 0.6, 0.75, 0.35};
    static const double speedup[7] = {1.8, 1.35, 2.0, 1.45, 1.7, 1.6, 1.9};
    static const double tv[7] = {0.16, 0.0, 0.19, 0.05, 0.14, 0.1, 0.18};
    FILE *fp = fopen(path, "w");
    if (!fp) return -1;
    fprintf(fp, "lenience,lossy,threads,speedup,a,tokens_per_round,tv_first_token,"
                "tv_first_prompt,tv_measured,bpb_generated\n");
    for (int i = 0; i < 7; i++)
        fprintf(fp, "%.2f,%d,2,%.4f,%.4f,%.4f,%.5f,%.5f,%.5f,%.4f\n", l[i], l[i] < 1, speedup[i],
                0.63 + 0.3 * (1 - l[i]), 2.1 + 2 * (1 - l[i]), tv[i], tv[i] * 1.08,
                tv[i] * 1.08 + 0.003, 1.0 + 0.4 * (1 - l[i]));
    return fclose(fp);
}

// drafters.csv: the draft model (auto-K, K = 4) and lookup (auto-K, K = 4, 8)
// at t = 0 and 1; auto-K spelled "auto" and "auto0" (both mean auto-K).
static int write_drafters(const char *path) {
    static const char *const drafter[5] = {"draft model", "draft model", "lookup", "lookup",
                                           "lookup"};
    static const char *const k[2][5] = {{"auto", "4", "auto", "4", "8"},
                                        {"auto0", "4", "auto0", "4", "8"}};
    static const double speedup[2][5] = {{1.45, 1.38, 1.12, 1.05, 0.92},
                                         {1.05, 0.98, 0.9, 0.82, 0.7}};
    static const double a[2][5] = {{0.78, 0.78, 0.45, 0.42, 0.4}, {0.63, 0.63, 0.25, 0.23, 0.22}};
    FILE *fp = fopen(path, "w");
    if (!fp) return -1;
    fprintf(fp, "drafter,threads,temperature,k,k_used,target_tok_s,spec_tok_s,speedup,a,c,"
                "tokens_per_round,no_match\n");
    for (int t = 0; t < 2; t++)
        for (int i = 0; i < 5; i++)
            fprintf(fp, "%s,2,%.2f,%s,%d,4000.00,%.2f,%.4f,%.4f,%.4f,%.4f,%.4f\n", drafter[i],
                    (double)t, k[t][i], 3 + i, 4000 * speedup[t][i], speedup[t][i], a[t][i],
                    i < 2 ? 0.14 : 0.004, 1 + 2.5 * a[t][i], i < 2 ? 0.0 : 0.31 + 0.14 * t);
    return fclose(fp);
}

// crowded_drafters.csv: the most configurations a figure shows (12) at two
// temperatures: bars far narrower than their notes; one row flagged by the
// bench's check
static int write_crowded_drafters(const char *path) {
    FILE *fp = fopen(path, "w");
    if (!fp) return -1;
    fprintf(fp, "drafter,threads,temperature,k,k_used,target_tok_s,spec_tok_s,speedup,a,c,tokens_per_round,check\n");
    for (int t = 0; t < 2; t++)
        for (int k = 1; k <= MAX_CATEGORIES; k++)
            fprintf(fp, "lookup,2,%d,%d,%d,100,120,%.4f,%.4f,0.0000,%.4f,%s\n", t, k, k, 1.2 - 0.02 * k - 0.1 * t,
                    0.6 - 0.01 * k, 1.5 + 0.1 * k, t == 1 && k == 3 ? "over_bound" : "ok");
    return fclose(fp);
}

// trees.csv: two targets x two temperatures, chains of K = 2..8 and trees of
// 4..15 nodes, rows of one series not in x order
static int write_trees(const char *path) {
    static const int chain[4] = {2, 4, 6, 8}, tree[4] = {15, 4, 8, 14};
    static const char *const shape[4] = {"3,2,1", "2,1", "2,1,1,1", "2,2,1,1"};
    static const char *const ones[4] = {"1,1", "1,1,1,1", "1,1,1,1,1,1", "1,1,1,1,1,1,1,1"};
    FILE *fp = fopen(path, "w");
    if (!fp) return -1;
    fprintf(fp, "target,temperature,kind,shape,nodes,speedup,tokens_per_round,r\n");
    for (int m = 0; m < 2; m++)
        for (int t = 0; t < 2; t++)
            for (int i = 0; i < 8; i++) {
                int tr = i >= 4, n = tr ? tree[i - 4] : chain[i];
                fprintf(fp, "%s,%d,%s,\"%s\",%d,%.4f,%.4f,%.4f\n", m ? "embedded 325MB" : "shipped", t,
                        tr ? "tree" : "chain", tr ? shape[i - 4] : ones[i], n,
                        (m ? 3.4 : 2.6) + 0.4 * t - 0.15 * n - 0.3 * tr, 1 + (0.3 - 0.1 * t) * n + 2.5 * m,
                        1 + 0.1 * n);
            }
    return fclose(fp);
}

static int write_fixtures(void) {
    mkdir("build", 0755);
    mkdir(DIR, 0755);
    mkdir(DIR "/partial", 0755);
    mkdir(DIR "/broken", 0755);
    return write_sweep_k(DIR "/sweep_k.csv") | write_sweep_temp(DIR "/sweep_temp.csv") |
           write_train(DIR "/train_target.csv", 1.6, 100) |
           write_train(DIR "/train_draft.csv", 2.3, 0) |
           write_train(DIR "/train_base.csv", 2.9, 100) |
           write_train(DIR "/train_target_dropout.csv", 1.45, 100) |
           write_verify_cost(DIR "/verify_cost.csv") | write_lenience(DIR "/lenience.csv") | write_scale(DIR "/scale.csv") |
           write_drafters(DIR "/drafters.csv") | write_crowded_drafters(DIR "/crowded_drafters.csv") | write_trees(DIR "/trees.csv") |
           write_sweep_temp(DIR "/partial/sweep_temp.csv") |
           write_text(DIR "/broken/verify_cost.csv", "model,n,rr\nx,1,1\n");
}

// ----------------------------------------------------------------------------
// Ticks, the formula, the mapping

static void test_ticks(void) {
    static const struct { double span; int max; double want; } cases[] = {
        {7.7, 10, 1}, {1.08, 6, 0.2}, {10, 5, 2}, {0.037, 6, 0.01}, {3e6, 6, 5e5}, {1, 5, 0.2},
        {95, 10, 10}, {2.5, 6, 0.5}, {0, 6, 1}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        double got = nice_step(cases[i].span, cases[i].max);
        CHECK(fabs(got - cases[i].want) < 1e-12 * cases[i].want, "nice_step(%g, %d) = %g, want %g",
              cases[i].span, cases[i].max, got, cases[i].want);
    }
    static const struct { double v, step; const char *want; } labels[] = {
        {0.6000000001, 0.2, "0.6"}, {-1e-17, 0.2, "0.0"}, {3, 1, "3"}, {0.05, 0.05, "0.05"},
        {1500000, 500000, "1500000"}, {1.0, 0.1, "1.0"}};
    char buf[32];
    for (size_t i = 0; i < sizeof(labels) / sizeof(labels[0]); i++) {
        format_tick(buf, sizeof(buf), labels[i].v, labels[i].step, 0);
        CHECK(!strcmp(buf, labels[i].want), "format_tick(%g, step %g) = \"%s\", want \"%s\"",
              labels[i].v, labels[i].step, buf, labels[i].want);
    }
    double v[16];
    size_t n = tick_values(v, 16, -0.04, 1.04, 0.2);
    CHECK(n == 6 && fabs(v[0]) < 1e-12 && fabs(v[5] - 1) < 1e-12, "ticks in [-0.04, 1.04] by 0.2: "
          "%zu of them, %g .. %g (want 6, 0 .. 1)", n, v[0], v[n ? n - 1 : 0]);
    printf("ticks: nice steps, labels and tick values checked\n");
}

// ----------------------------------------------------------------------------
// Text: where stb_easy_font's glyphs land, and how much ink they leave

// The inked box of c: x in [box[0], box[1]), y in [box[2], box[3]); empty
// (box[0] >= box[1]) when nothing is drawn.
static void ink_box(int box[4], const Canvas *c) {
    box[0] = box[2] = 1 << 30;
    box[1] = box[3] = -1;
    for (int y = 0; y < c->h; y++)
        for (int x = 0; x < c->w; x++) {
            if (same_color(get_pixel(c, x, y), WHITE)) continue;
            box[0] = x < box[0] ? x : box[0];
            box[1] = x + 1 > box[1] ? x + 1 : box[1];
            box[2] = y < box[2] ? y : box[2];
            box[3] = y + 1 > box[3] ? y + 1 : box[3];
        }
}

// The ink on c in pixels' worth of full INK (a pixel half covered adds 0.5).
static double ink_mass(const Canvas *c) {
    double m = 0;
    for (size_t i = 0; i < (size_t)c->w * (size_t)c->h; i++)
        m += (255.0 - c->px[3 * i]) / (255.0 - INK.r);
    return m;
}

// How many font-unit cells the glyphs of s ink.
static int inked_cells(const char *s) {
    unsigned char cells[TEXT_H][GLYPH_W];
    int n = 0;
    for (; *s; s++) {
        glyph_cells(cells, *s);
        for (int i = 0; i < TEXT_H * GLYPH_W; i++) n += cells[i / GLYPH_W][i % GLYPH_W];
    }
    return n;
}

// Draws s on a fresh 200 x 100 canvas with pen p.
static int text_canvas(Canvas *c, const TextPen *p, const char *s) {
    Error e = {.msg = ""};
    int rc = build_canvas(c, 200, 100, &e);
    CHECK(rc == 0, "canvas: %s", e.msg);
    if (rc == 0) draw_text(c, p, s);
    return rc;
}

// Horizontal text fills its box from the pen's origin (text_width wide, to the
// descenders' depth); vertical text is the same pixels turned a quarter turn.
static void test_text_boxes(void) {
    const char *s = "Kg0.5";
    int w = text_width(s, TEXT_SCALE), depth = (int)ceil(9 * TEXT_SCALE), a[4], b[4], same = 1;
    Canvas h, v;
    if (text_canvas(&h, &(TextPen){.x = 10, .y = 20, .scale = TEXT_SCALE}, s)) return;
    if (text_canvas(&v, &(TextPen){.x = 10, .y = 90, .scale = TEXT_SCALE, .vertical = 1}, s)) {
        free_canvas(&h);
        return;
    }
    ink_box(a, &h);
    ink_box(b, &v);
    CHECK(a[0] == 10 && a[1] == 10 + w && a[2] == 20 && a[3] == 20 + depth,
          "\"%s\" at (10, 20): ink in x [%d, %d) y [%d, %d), want [10, %d) [20, %d)", s, a[0], a[1],
          a[2], a[3], 10 + w, 20 + depth);
    CHECK(b[0] == 10 && b[1] == 10 + depth && b[2] == 90 - w && b[3] == 90,
          "\"%s\" upward from (10, 90): ink in x [%d, %d) y [%d, %d), want [10, %d) [%d, 90)", s,
          b[0], b[1], b[2], b[3], 10 + depth, 90 - w);
    for (int tx = 0; tx < w + 2; tx++)
        for (int ty = 0; ty < depth + 2; ty++)
            same &= same_color(get_pixel(&h, 10 + tx, 20 + ty), get_pixel(&v, 10 + ty, 89 - tx));
    CHECK(same, "the upward text is the horizontal text's pixels turned a quarter turn");
    printf("text: \"%s\" inks x [%d, %d) y [%d, %d); upward, x [%d, %d) y [%d, %d)\n", s, a[0],
           a[1], a[2], a[3], b[0], b[1], b[2], b[3]);
    free_canvas(&h);
    free_canvas(&v);
}

// Each inked font cell leaves scale^2 pixels of ink, overlapping quads (#, $,
// *, f, t) counted once; a byte outside ASCII draws as '?'.
static void test_text_ink(void) {
    static const char *const samples[] = {"#$*ft", "Speedup vs K", "0.123456789"};
    static const double scales[] = {1, TEXT_SCALE, TITLE_SCALE};
    for (size_t i = 0; i < 3; i++)
        for (size_t j = 0; j < 3; j++) {
            Canvas c;
            if (text_canvas(&c, &(TextPen){.x = 4, .y = 30, .scale = scales[j]}, samples[i])) return;
            double want = inked_cells(samples[i]) * scales[j] * scales[j], got = ink_mass(&c);
            CHECK(fabs(got - want) < 0.01 * want, "\"%s\" at scale %g: %.2f pixels of ink, want %.2f",
                  samples[i], scales[j], got, want);
            free_canvas(&c);
        }
    Canvas u, q;
    if (text_canvas(&u, &(TextPen){.x = 4, .y = 30, .scale = 2}, "\xc3\xa9!")) return;
    if (text_canvas(&q, &(TextPen){.x = 4, .y = 30, .scale = 2}, "?\?!") == 0) {
        CHECK(!memcmp(u.px, q.px, 200 * 100 * 3), "UTF-8 bytes draw as '?'");
        free_canvas(&q);
    }
    free_canvas(&u);
    printf("text: ink = inked cells x scale^2 at scales 1, %g, %g; UTF-8 drawn as '?'\n",
           TEXT_SCALE, TITLE_SCALE);
}

static void test_formula(void) {
    // a round of K drafts costs (K + a^K) draft steps (the position after K accepted
    // drafts is drafted too) and one verify pass
    double got = theory_speedup(0.8, 4, 0.05, 1.1);
    double want = (1 - pow(0.8, 5)) / 0.2 / ((4 + pow(0.8, 4)) * 0.05 + 1.1);
    CHECK(fabs(got - want) < 1e-12, "theory_speedup(0.8, 4, 0.05, 1.1) = %g, want %g", got, want);
    got = theory_speedup(1.0, 4, 0.05, 1.1);
    CHECK(fabs(got - 5 / 1.35) < 1e-12, "theory_speedup(a = 1) = %g, want (K+1)/((K+1)c+r) = %g", got,
          5 / 1.35);
    got = theory_speedup(0, 3, 0.1, 1.0);
    CHECK(fabs(got - 1 / 1.3) < 1e-12, "theory_speedup(a = 0) = %g, want 1/(Kc+r) = %g", got, 1 / 1.3);
    CHECK(isnan(theory_speedup(0.8, NAN, 0.05, 1.1)) && isnan(theory_speedup(0.8, 2.5, 0.05, 1.1)) &&
              isnan(theory_speedup(0.8, 0, 0.05, 1.1)) && isnan(theory_speedup(0.8, 65, 0.05, 1.1)),
          "a K that is not a whole number from 1 to 64 gives no theory point");
    printf("formula: speedup(K) = (1 - a^(K+1)) / ((1 - a)((K + a^K) c + r)) at a = 0.8, 1, 0\n");
}

// ----------------------------------------------------------------------------
// The CSV reader

static void test_reader(void) {
    Error e = {.msg = ""};
    Table t;
    write_text(DIR "/reader.csv", "b, a ,\"quoted, name\",unused\r\n"
                                  "1,2,\"say \"\"hi\"\"\",x\r\n"
                                  "\r\n"
                                  "3,,   ,\r\n"
                                  "5\r\n");
    int rc = read_table(&t, DIR "/reader.csv", &e);
    CHECK(rc == 0, "read_table(reader.csv): %s", e.msg);
    if (rc) { free_table(&t); return; }
    int a = find_column(&t, "a"), b = find_column(&t, "b"), q = find_column(&t, "quoted, name");
    CHECK(t.n_cols == 4 && t.n_rows == 3, "%zu columns, %zu rows (want 4, 3: the blank line skipped)",
          t.n_cols, t.n_rows);
    CHECK(a == 1 && b == 0 && q == 2 && find_column(&t, "zzz") == -1,
          "columns by name: a %d, b %d, \"quoted, name\" %d (want 1, 0, 2)", a, b, q);
    if (a != 1 || b != 0 || q != 2 || t.n_rows != 3) { free_table(&t); return; }
    CHECK(num(&t, 0, a) == 2 && num(&t, 1, b) == 3 && num(&t, 2, b) == 5, "numbers: %g %g %g",
          num(&t, 0, a), num(&t, 1, b), num(&t, 2, b));
    CHECK(!strcmp(cell(&t, 0, q), "say \"hi\""), "quoted field: [%s]", cell(&t, 0, q));
    CHECK(isnan(num(&t, 1, a)) && !strcmp(cell(&t, 1, q), ""), "empty fields: a = %g, q = [%s]",
          num(&t, 1, a), cell(&t, 1, q));
    CHECK(isnan(num(&t, 2, a)) && !strcmp(cell(&t, 2, 3), ""),
          "short row: the missing fields are empty");
    CHECK(t.lines[0] == 2 && t.lines[1] == 4 && t.lines[2] == 5, "line numbers %zu %zu %zu (want 2 4 5)",
          t.lines[0], t.lines[1], t.lines[2]);
    int cols[2];
    static const char *const ok[] = {"b", "a"}, *const bad[] = {"a", "quoted, name"};
    CHECK(require_numbers(cols, &t, ok, 2, &e) == 0, "b and a are numeric: %s", e.msg);
    rc = require_numbers(cols, &t, bad, 2, &e);
    CHECK(rc < 0 && strstr(e.msg, "reader.csv:2") && strstr(e.msg, "quoted, name"),
          "a text field in a numeric column names file, line and column: \"%s\"", e.msg);
    rc = require_numbers(cols, &t, (const char *const[]){"zzz"}, 1, &e);
    CHECK(rc < 0 && strstr(e.msg, "reader.csv") && strstr(e.msg, "\"zzz\""),
          "a missing column names file and column: \"%s\"", e.msg);
    CHECK(same_key("1", "1.0") && !same_key("1", "10") && same_key("random 110M", "random 110M"),
          "group keys compare as numbers, else as text");
    free_table(&t);
    printf("reader: by-name columns, quotes, empty fields, short rows, CRLF, bad numbers\n");
}

static void test_reader_edges(void) {
    Error e = {.msg = ""};
    Table t;
    write_text(DIR "/cr.csv", "x,y\r1,2\r3,4\r");
    int rc = read_table(&t, DIR "/cr.csv", &e);
    CHECK(rc == 0 && t.n_rows == 2 && num(&t, 1, 1) == 4, "CR-only line endings: rc %d, %zu rows",
          rc, t.n_rows);
    free_table(&t);
    write_text(DIR "/empty.csv", "");
    rc = read_table(&t, DIR "/empty.csv", &e);
    CHECK(rc < 0 && strstr(e.msg, "empty.csv"), "an empty file is an error: \"%s\"", e.msg);
    free_table(&t);
    rc = read_table(&t, DIR "/no_such_file.csv", &e);
    CHECK(rc < 0 && strstr(e.msg, "no_such_file.csv"), "a missing file is an error naming it: "
          "\"%s\"", e.msg);
    free_table(&t);
    write_text(DIR "/header_only.csv", "model,n,r\n");
    rc = read_table(&t, DIR "/header_only.csv", &e);
    CHECK(rc == 0 && t.n_rows == 0 && t.n_cols == 3, "header only: rc %d, %zu rows", rc, t.n_rows);
    free_table(&t);
}

// ----------------------------------------------------------------------------
// Figures: every marker and bar where the axes put it, in its colour

// Whether a marker drawn after point j of series i reaches pixel (x, y), the
// one checked for that point (then it may legitimately cover it).
static int covered_later(const Figure *f, const Axes *ax, size_t i, size_t j, int x, int y) {
    double qx, qy;
    for (size_t a = i; a < f->n_series; a++)
        for (size_t b = a == i ? j + 1 : 0; f->series[a].marker && b < f->series[a].n; b++) {
            double reach = marker_reach(f->series[a].marker) + 2;
            data_to_pixel(&qx, &qy, ax, f->series[a].pts[b].x, f->series[a].pts[b].y);
            if (fabs(x + 0.5 - qx) < reach && fabs(y + 0.5 - qy) < reach) return 1;
        }
    return 0;
}

// The pixel that shows series i's point j in its colour: the marker's centre,
// a ring's rightmost pixel, a bar's middle.
static void point_pixel(int *x, int *y, const Figure *f, const Axes *ax, size_t i, size_t j) {
    const Series *s = &f->series[i];
    double px, py, x0, x1;
    if (s->kind == SERIES_BARS) {
        bar_span(&x0, &x1, f, i, s->pts[j].x);
        data_to_pixel(&px, &py, ax, (x0 + x1) / 2, s->pts[j].y / 2);
    } else data_to_pixel(&px, &py, ax, s->pts[j].x, s->pts[j].y);
    *x = (int)floor(px + (s->kind != SERIES_BARS && marker_drawn(f, ax, i, j) == MARK_RING ? ring_radius(f, ax, i, j) : 0));
    *y = (int)floor(py);
}

// Checks every marker and bar of f on c; returns how many pixels it compared.
static size_t check_points(const char *name, const Canvas *c, const Axes *ax, const Figure *f) {
    size_t compared = 0, skipped = 0;
    for (size_t i = 0; i < f->n_series; i++) {
        const Series *s = &f->series[i];
        if (!s->marker && s->kind != SERIES_BARS) continue;
        size_t wrong = 0;
        for (size_t j = 0; j < s->n; j++) {
            int x, y;
            point_pixel(&x, &y, f, ax, i, j);
            if (s->marker && covered_later(f, ax, i, j, x, y)) { skipped++; continue; }
            int inside = x >= ax->left && x < ax->right && y >= ax->top && y < ax->bottom;
            wrong += !inside || !same_color(get_pixel(c, x, y), s->color);
            compared++;
        }
        CHECK(wrong == 0, "%s: %zu of %zu points of \"%s\" not in its colour where the axes put them",
              name, wrong, s->n, s->label);
    }
    printf("%s: %zu marker/bar pixels compared with their series' colours (%zu skipped: covered "
           "by a later marker)\n", name, compared, skipped);
    return compared;
}

// The written file: PNG signature, then IHDR's width and height (big-endian).
static void check_png(const char *path, int w, int h) {
    unsigned char b[24] = {0};
    FILE *fp = fopen(path, "rb");
    size_t n = fp ? fread(b, 1, sizeof(b), fp) : 0;
    if (fp) fclose(fp);
    static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    long fw = (long)b[16] << 24 | (long)b[17] << 16 | b[18] << 8 | b[19];
    long fh = (long)b[20] << 24 | (long)b[21] << 16 | b[22] << 8 | b[23];
    CHECK(n == 24 && !memcmp(b, sig, 8) && !memcmp(b + 12, "IHDR", 4) && fw == w && fh == h,
          "%s: %zu header bytes, signature %s, IHDR %ldx%ld (want %dx%d)", path, n,
          memcmp(b, sig, 8) ? "bad" : "ok", fw, fh, w, h);
    printf("%s: PNG signature and IHDR %ldx%ld\n", path, fw, fh);
}

// Draws one figure from the fixtures, checks its pixels, writes and checks the PNG.
static void test_figure(const char *name, const char *const *inputs, size_t n, size_t min_points) {
    Error e = {.msg = ""};
    const FigureSpec *spec = find_figure(name);
    char paths[MAX_INPUTS][256], out[256];
    const char *p[MAX_INPUTS];
    Canvas c;
    Axes ax;
    Figure f;
    CHECK(spec != NULL, "figure %s exists", name);
    if (!spec) return;
    for (size_t i = 0; i < n; i++) {
        snprintf(paths[i], sizeof(paths[i]), DIR "/%s", inputs[i]);
        p[i] = paths[i];
    }
    int rc = render_from_files(&c, &ax, &f, spec, p, n, &e);
    CHECK(rc == 0, "%s: %s", name, e.msg);
    if (rc == 0) {
        CHECK(c.w == FIG_W && c.h == FIG_H, "%s: canvas %dx%d", name, c.w, c.h);
        size_t compared = check_points(name, &c, &ax, &f);
        CHECK(compared >= min_points, "%s: only %zu points compared, want >= %zu", name, compared,
              min_points);
    }
    free_canvas(&c);
    free_figure(&f);
    snprintf(out, sizeof(out), DIR "/%s.png", name);
    remove(out);
    rc = make_figure(spec, p, n, out, &e);
    CHECK(rc == 0, "%s: make_figure: %s", name, e.msg);
    check_png(out, FIG_W, FIG_H);
}

// The speedup figure's theory curve is the formula at each row's K, with the
// temperature's mean a and c and the row's own r.
static void test_theory_curve(void) {
    Error e = {.msg = ""};
    Canvas c;
    Axes ax;
    Figure f;
    const char *p[1] = {DIR "/sweep_k.csv"};
    int rc = render_from_files(&c, &ax, &f, find_figure("speedup_vs_k"), p, 1, &e);
    CHECK(rc == 0 && f.n_series == 5, "speedup_vs_k: rc %d, %zu series (want 2 per temperature + "
          "the break-even line)", rc, f.n_series);
    for (size_t g = 0; rc == 0 && g < 2; g++) {
        const Series *th = &f.series[2 * g + 1];
        double a = g ? 0.65 : 0.8, worst = 0;
        for (size_t j = 0; j < th->n; j++) {
            double k = th->pts[j].x;
            worst = fmax(worst, fabs(th->pts[j].y - theory_speedup(a, k, 0.08, 1 + 0.03 * k)));
        }
        CHECK(th->n == 8 && worst < 1e-9, "T = %zu theory curve: %zu points, worst error %g", g,
              th->n, worst);
    }
    free_canvas(&c);
    free_figure(&f);
    printf("speedup_vs_k: theory curves match the formula at K = 1..8\n");
}

// Draws figure `name` from one fixture into *c, *ax, *f (freed by the caller).
static int render_fixture(Canvas *c, Axes *ax, Figure *f, const char *name, const char *csv) {
    Error e = {.msg = ""};
    const char *p[1] = {csv};
    int rc = render_from_files(c, ax, f, find_figure(name), p, 1, &e);
    CHECK(rc == 0, "%s from %s: %s", name, csv, e.msg);
    return rc;
}

// scale: both axes logarithmic (a point is log10 of its numbers; ticks read as powers of
// ten), the read limit the read loop's GB/s over the bytes a token, speculation the better
// of K = 4 and auto-K, each size named at its target point, runq.c only where measured.
static void test_scale_log(void) {
    Canvas c;
    Axes ax;
    Figure f;
    char tick[2][32];
    format_tick(tick[0], sizeof(tick[0]), 3, 1, 1), format_tick(tick[1], sizeof(tick[1]), -1, 1, 1);
    CHECK(!strcmp(tick[0], "1000") && !strcmp(tick[1], "0.1"), "log ticks 3, -1 read \"%s\", \"%s\" (want "
          "\"1000\", \"0.1\")", tick[0], tick[1]);
    int rc = render_fixture(&c, &ax, &f, "scale", DIR "/scale.csv");
    CHECK(rc || (f.log_xy && ax.log_xy && f.n_series == 5 && f.series[4].n == 2 && f.n_notes == 3),
          "scale: log %d, %zu series (want 5), runq.c %zu points (want 2), %zu notes (want 3)", f.log_xy, f.n_series,
          rc ? 0 : f.series[4].n, f.n_notes);
    if (rc == 0 && f.n_series == 5 && f.series[1].n == 3) {
        CHECK(fabs(f.series[0].pts[1].y - log10(21e9 / 1.1e9)) < 1e-9 && fabs(f.series[1].pts[1].y - log10(18)) < 1e-9
              && fabs(f.series[1].pts[1].x - log10(1.1)) < 1e-9 && fabs(f.series[2].pts[0].y - log10(700)) < 1e-9,
              "scale points: read limit %g (want %g), target %g at %g, speculation t = 0 %g (want log10 of 21e9 / "
              "1.1e9, 18 at 1.1 GB, 700)", f.series[0].pts[1].y, log10(21e9 / 1.1e9), f.series[1].pts[1].y,
              f.series[1].pts[1].x, f.series[2].pts[0].y);
        CHECK(!strcmp(f.notes[1].text, "1.0B"), "scale: the second size named \"%s\" (want \"1.0B\")", f.notes[1].text);
    }
    free_canvas(&c);
    free_figure(&f);
    printf("scale: log axes, powers-of-ten ticks, each size named, runq.c where measured\n");
}

// The lenience curve runs in order of l from the exact point down, whatever
// the rows' order, each point labelled with its l; rings show the measured
// distances at the same speedups.
static void test_lenience_curve(void) {
    static const double tv[7] = {0.0, 0.05, 0.1, 0.14, 0.16, 0.18, 0.19};
    Canvas c;
    Axes ax;
    Figure f;
    int rc = render_fixture(&c, &ax, &f, "lenience", DIR "/lenience.csv");
    CHECK(rc || (f.n_series == 3 && f.n_notes == 7 && f.series[0].n == 7 &&
                 f.series[1].n == 7 && f.series[1].marker == MARK_RING),
          "lenience: %zu series, %zu notes (want 3: curve, rings, break-even; 7)", f.n_series,
          f.n_notes);
    for (size_t j = 0; rc == 0 && f.series[0].n == 7 && j < 7; j++) {
        CHECK(f.series[0].pts[j].x == tv[j] && f.notes[j].point == j && f.notes[j].series == 0,
              "lenience point %zu: tv %g (want %g), note on point %zu", j, f.series[0].pts[j].x,
              tv[j], f.notes[j].point);
        CHECK(f.series[1].pts[j].y == f.series[0].pts[j].y, "ring %zu at its point's speedup", j);
    }
    if (rc == 0 && f.n_notes == 7)
        CHECK(!strcmp(f.notes[0].text, "l=1.00 (exact)") && !strcmp(f.notes[2].text, "l=0.75"),
              "lenience notes \"%s\", \"%s\" (want \"l=1.00 (exact)\", \"l=0.75\")",
              f.notes[0].text, f.notes[2].text);
    CHECK(rc || strstr(f.ylabel, "(2 threads)"), "lenience y label \"%s\" names 2 threads",
          f.ylabel);
    free_canvas(&c);
    free_figure(&f);
    printf("lenience: the curve in order of l, labelled, the measured rings beside it\n");
}

// One bar per (drafter, K) and temperature, at the configuration's category,
// with a, tokens per round and c noted above it; "auto" and "auto0" are one.
static void test_drafter_bars(void) {
    Canvas c;
    Axes ax;
    Figure f;
    int rc = render_fixture(&c, &ax, &f, "drafters", DIR "/drafters.csv");
    CHECK(rc || (f.n_categories == 5 && f.n_series == 3 && f.n_notes == 10),
          "drafters: %zu categories, %zu series, %zu notes (want 5, 3, 10)", f.n_categories,
          f.n_series, f.n_notes);
    if (rc == 0 && f.n_categories == 5 && f.n_notes == 10) {
        CHECK(!strcmp(f.categories[0], "draft model\nauto-K") &&
                  !strcmp(f.categories[4], "lookup\nK = 8"),
              "categories \"%s\" .. \"%s\"", f.categories[0], f.categories[4]);
        CHECK(!strcmp(f.notes[0].text, "0.78\n2.95\n0.14") && f.notes[5].series == 1,
              "the first bar's note \"%s\" (want a, n, c); note 5 on series %zu (want T = 1)",
              f.notes[0].text, f.notes[5].series);
        for (size_t j = 0; j < 5; j++)
            CHECK(f.series[0].pts[j].x == (double)(j + 1) &&
                      f.series[1].pts[j].x == (double)(j + 1),
                  "bar %zu of both temperatures at x = %zu", j, j + 1);
        CHECK(ax.tick_lines == 2 && ax.xstep == 1, "two-line category names, a tick per category");
    }
    free_canvas(&c);
    free_figure(&f);
    printf("drafters: 5 configurations x 2 temperatures, noted, auto-K spellings merged\n");
}

// A note goes beside its point on the first side free of ink (right, then
// left, ...), and is kept inside the plot area even at its edge.
static void test_note_placement(void) {
    Canvas c = {.px = NULL};
    Error e = {.msg = ""};
    Axes ax = {.left = 100, .top = 50, .right = 700, .bottom = 450};
    int x = 0, y = 0, w = block_width("l=0.75"), h = block_height("l=0.75");
    if (build_canvas(&c, 800, 500, &e)) return;
    place_beside(&x, &y, &c, &ax, 400, 250, w, h, 10, NULL, 0, NULL);
    CHECK(x == 410 && y == (int)lround(250 - h / 2.0), "a free note goes right: (%d, %d)", x, y);
    fill_rect(&c, 405, 200, 520, 300, INK);
    place_beside(&x, &y, &c, &ax, 400, 250, w, h, 10, NULL, 0, NULL);
    CHECK(x == 390 - w, "with ink at the right it goes left: x %d (want %d)", x, 390 - w);
    fill_rect(&c, 100, 50, 700, 450, INK);
    place_beside(&x, &y, &c, &ax, 698, 52, w, h, 10, NULL, 0, NULL);
    CHECK(x - NOTE_PAD > ax.left && x + w + NOTE_PAD < ax.right && y - NOTE_PAD > ax.top &&
              y + h + NOTE_PAD < ax.bottom,
          "a note at the corner stays in the plot area: (%d, %d) %dx%d", x, y, w, h);
    CHECK(block_height("a\nb\nc") == 2 * LINE_ADVANCE + (int)ceil(TEXT_H * TEXT_SCALE) &&
              block_width("ab\nabcd\na") == text_width("abcd", TEXT_SCALE),
          "a block's size: its lines' height, its widest line");
    free_canvas(&c);
    printf("notes: placed beside their points where there is no ink, inside the plot\n");
}

// ----------------------------------------------------------------------------
// What is drawn against the CSV it is drawn from: counts and means computed
// here from the file's own columns, for the fixtures and for the committed
// docs/*.csv (the figures in docs/ are drawn from those)

// Draws figure `name` from the CSVs paths[0..n) into *c, *ax, *f (freed by the caller).
static int render_paths(Canvas *c, Axes *ax, Figure *f, const char *name, const char *const *paths,
                        size_t n) {
    Error e = {.msg = ""};
    int rc = render_from_files(c, ax, f, find_figure(name), paths, n, &e);
    CHECK(rc == 0, "%s from %s: %s", name, paths[0], e.msg);
    return rc;
}

// The series labelled exactly `label`, or (prefix) whose label starts with it; NULL if none.
static const Series *series_labelled(const Figure *f, const char *label, int prefix) {
    for (size_t i = 0; i < f->n_series; i++)
        if (prefix ? !strncmp(f->series[i].label, label, strlen(label)) : !strcmp(f->series[i].label, label))
            return &f->series[i];
    return NULL;
}

// Whether row r of a sweep is a fixed-K row with K = 8 (the detail figures' rows).
static int detail_row(const Table *t, size_t r) {
    int k = find_column(t, "k"), a = find_column(t, "auto");
    return num(t, r, k) == 8 && !(a >= 0 && num(t, r, a) == 1);
}

// Figure `name` drawn from csv alone, and csv read into t: 0, or -1 after a
// failed CHECK naming both
static int draw_from(Table *t, Canvas *c, Axes *ax, Figure *f, const char *name, const char *csv) {
    Error e = {.msg = ""};
    const char *p[1] = {csv};
    if (!read_table(t, csv, &e) && !render_paths(c, ax, f, name, p, 1)) return 0;
    CHECK(0, "%s from %s: %s", name, csv, e.msg);
    free_table(t);
    return -1;
}

// tokens_per_round: per temperature, one bar per filled histogram bin of the
// K = 8 row (hist0, hist1, ... as many as the file has), each its share of
// the rounds, and the legend's mean the row's tokens_per_round (the CSV's:
// docs/sweep_k.csv's 4.81 at T = 0, where the bins' mean, j accepted committing
// j + 1 tokens, is 4.85: a round cut short by -n commits fewer).
static void test_histogram_matches(const char *csv) {
    Table t = {0};
    Canvas c;
    Axes ax;
    Figure f;
    if (draw_from(&t, &c, &ax, &f, "tokens_per_round", csv)) return;
    int tc = find_column(&t, "temperature"), tpr = find_column(&t, "tokens_per_round");
    size_t rows = 0;
    for (size_t r = 0; r < t.n_rows; r++) {
        if (!detail_row(&t, r)) continue;
        double h[32], rounds = 0, tokens = 0;
        size_t bins = 0;
        for (int j = 0; j < 32; j++) {
            char name[16];
            snprintf(name, sizeof(name), "hist%d", j);
            int col = find_column(&t, name);
            if (col < 0) break;
            h[j] = num(&t, r, col);
            if (isnan(h[j])) continue;
            bins++;
            rounds += h[j];
            tokens += (j <= 8 ? j + 1 : 9) * h[j];
        }
        char label[64];
        snprintf(label, sizeof(label), "T = %s (", cell(&t, r, tc));
        const Series *s = series_labelled(&f, label, 1);
        const char *m = s ? strstr(s->label, "mean ") : NULL;
        double legend = m ? strtod(m + 5, NULL) : NAN, want = tokens / rounds;
        CHECK(s && s->n == bins, "%s T = %s: %zu bars drawn, the CSV has %zu histogram bins", csv,
              cell(&t, r, tc), s ? s->n : 0, bins);
        // the legend is the row's tokens_per_round; the bins' mean may sit a little higher: a
        // generation's last round, cut by -n or the end of the text, is in bin j but kept j tokens
        CHECK(fabs(legend - num(&t, r, tpr)) < 0.006 && fabs(legend - want) < 0.06,
              "%s T = %s: legend mean %.2f, the row's tokens_per_round %.3f, the bins' mean %.3f", csv,
              cell(&t, r, tc), legend, num(&t, r, tpr), want);
        double worst = 0;
        for (size_t j = 0; s && j < s->n && j < bins; j++)
            worst = fmax(worst, fabs(s->pts[j].y - h[(size_t)s->pts[j].x] / rounds));
        CHECK(worst < 1e-12, "%s T = %s: bar heights off their bins' shares by up to %g", csv,
              cell(&t, r, tc), worst);
        printf("%s T = %s: %zu bars for %zu bins (%.0f rounds); legend mean %.2f, bins' %.3f, "
               "tokens_per_round %.3f\n", csv, cell(&t, r, tc), s ? s->n : 0, bins, rounds, legend, want,
               num(&t, r, tpr));
        rows++;
    }
    CHECK(rows > 0, "%s: no K = 8 rows", csv);
    free_canvas(&c);
    free_figure(&f);
    free_table(&t);
}

// acceptance_by_position: per temperature, one point per filled pos<i> of the
// K = 8 row (pos1, pos2, ... as many as the file has), at x = i, y = its value.
static void test_acceptance_matches(const char *csv) {
    Table t = {0};
    Canvas c;
    Axes ax;
    Figure f;
    if (draw_from(&t, &c, &ax, &f, "acceptance_by_position", csv)) return;
    int tc = find_column(&t, "temperature");
    for (size_t r = 0; r < t.n_rows; r++) {
        if (!detail_row(&t, r)) continue;
        char label[64];
        snprintf(label, sizeof(label), "T = %s", cell(&t, r, tc));
        const Series *s = series_labelled(&f, label, 0);
        size_t filled = 0, wrong = 0;
        for (int i = 1; i < 32; i++) {
            char name[16];
            snprintf(name, sizeof(name), "pos%d", i);
            int col = find_column(&t, name);
            if (col < 0) break;
            if (isnan(num(&t, r, col))) continue;
            int found = 0;
            for (size_t j = 0; s && j < s->n; j++)
                found |= s->pts[j].x == i && s->pts[j].y == num(&t, r, col);
            wrong += !found;
            filled++;
        }
        CHECK(s && s->n == filled && wrong == 0, "%s T = %s: %zu points drawn, the CSV has %zu positions, "
              "%zu of them not drawn at their value", csv, cell(&t, r, tc), s ? s->n : 0, filled, wrong);
        printf("%s T = %s: %zu positions drawn of %zu in the CSV\n", csv, cell(&t, r, tc), s ? s->n : 0,
               filled);
    }
    free_canvas(&c);
    free_figure(&f);
    free_table(&t);
}

// Whether any two of the figure's bar notes (padding included) overlap, or
// one leaves the plot area; says which.
static int bar_notes_clash(const char *what, const Axes *ax, const Figure *f) {
    int box[MAX_NOTES][4], clash = 0;
    bar_note_boxes(box, ax, f);
    for (size_t i = 0; i < f->n_notes; i++) {
        const int *a = box[i];
        if (!a[2]) continue;
        if (a[1] - NOTE_PAD <= ax->top || a[0] - NOTE_PAD <= ax->left || a[0] + a[2] + NOTE_PAD >= ax->right) {
            printf("%s: note %zu \"%s\" leaves the plot area at (%d, %d)\n", what, i, f->notes[i].text, a[0], a[1]);
            clash = 1;
        }
        for (size_t j = 0; j < i; j++) {
            const int *b = box[j];
            int m = 2 * NOTE_PAD;
            if (b[2] && a[0] < b[0] + b[2] + m && b[0] < a[0] + a[2] + m && a[1] < b[1] + b[3] + m &&
                b[1] < a[1] + a[3] + m) {
                printf("%s: note %zu at (%d, %d) overlaps note %zu at (%d, %d)\n", what, i, a[0], a[1], j, b[0], b[1]);
                clash = 1;
            }
        }
    }
    return clash;
}

// drafters and drafters_dram: a bar per row that names a drafter, at its
// speedup, in its temperature's series, with the row's a, tokens per round
// and c noted above it; no two notes overlap (they did: each temperature's
// notes were wider than its bar).
static void test_drafters_match(const char *name, const char *csv) {
    Table t = {0};
    Canvas c;
    Axes ax;
    Figure f;
    if (draw_from(&t, &c, &ax, &f, name, csv)) return;
    int dc = find_column(&t, "drafter"), tc = find_column(&t, "temperature"), sc = find_column(&t, "speedup"),
        vc[3] = {find_column(&t, "a"), find_column(&t, "tokens_per_round"), find_column(&t, "c")};
    size_t rows = 0, found = 0, bars = 0, flags = 0;
    for (size_t i = 0; i < f.n_series; i++) bars += f.series[i].kind == SERIES_BARS ? f.series[i].n : 0;
    for (size_t r = 0; r < t.n_rows; r++) {
        if (!cell(&t, r, dc)[0]) continue;
        char label[64], want[64];
        snprintf(label, sizeof(label), "T = %s", cell(&t, r, tc));
        int ck = find_column(&t, "check"), flagged = ck >= 0 && cell(&t, r, ck)[0] && strcmp(cell(&t, r, ck), "ok");
        snprintf(want, sizeof(want), "%.2f\n%.2f\n%.2f%s", num(&t, r, vc[0]), num(&t, r, vc[1]), num(&t, r, vc[2]),
                 flagged ? "\n!" : "");
        flags += flagged;
        const Series *s = series_labelled(&f, label, 0);
        int hit = 0;
        for (size_t i = 0; s && i < f.n_notes; i++) {
            const Note *n = &f.notes[i];
            hit |= &f.series[n->series] == s && s->pts[n->point].y == num(&t, r, sc) && !strcmp(n->text, want);
        }
        CHECK(hit, "%s from %s: row %zu (%s, T = %s): no bar at speedup %s noted \"%s\"", name, csv, r + 1,
              cell(&t, r, dc), cell(&t, r, tc), cell(&t, r, sc), want);
        found += (size_t)hit;
        rows++;
    }
    CHECK(bars == rows, "%s from %s: %zu bars drawn for %zu rows", name, csv, bars, rows);
    CHECK(!flags == !series_labelled(&f, "!: flagged", 1), "%s from %s: %zu rows flagged in column check, the "
          "legend %s them", name, csv, flags, series_labelled(&f, "!: flagged", 1) ? "explains" : "does not explain");
    CHECK(!bar_notes_clash(csv, &ax, &f), "%s from %s: bar notes overlap or leave the plot area", name, csv);
    printf("%s from %s: %zu bars for %zu rows, %zu at their speedup with their a, n, c; notes apart\n", name, csv,
           bars, rows, found);
    free_canvas(&c);
    free_figure(&f);
    free_table(&t);
}

// trees_speedup and trees_tokens: a point per row (its line's), and each tree
// shape the CSV names noted once, on a tree's point at the shape's node count.
static void test_trees_match(const char *name, const char *csv) {
    Table t = {0};
    Canvas c;
    Axes ax;
    Figure f;
    if (draw_from(&t, &c, &ax, &f, name, csv)) return;
    int kc = find_column(&t, "kind"), sc = find_column(&t, "shape"), nc = find_column(&t, "nodes");
    size_t points = 0, shapes = 0;
    for (size_t i = 0; i < f.n_series; i++) points += f.series[i].kind == SERIES_XY ? f.series[i].n : 0;
    CHECK(points == t.n_rows, "%s from %s: %zu points drawn for %zu rows", name, csv, points, t.n_rows);
    CHECK(sc >= 0, "%s: no shape column", csv);
    for (size_t r = 0; sc >= 0 && r < t.n_rows; r++) {
        int first = strcmp(cell(&t, r, kc), "tree") == 0;
        for (size_t q = 0; first && q < r; q++)
            first = strcmp(cell(&t, q, kc), "tree") || strcmp(cell(&t, q, sc), cell(&t, r, sc));
        if (!first) continue;
        size_t hits = 0, placed = 0;
        for (size_t i = 0; i < f.n_notes; i++) {
            const Series *s = &f.series[f.notes[i].series];
            if (strcmp(f.notes[i].text, cell(&t, r, sc))) continue;
            hits++;
            placed += s->pattern == DASHED && s->pts[f.notes[i].point].x == num(&t, r, nc);
        }
        CHECK(hits == 1 && placed == 1, "%s from %s: tree %s noted %zu times (%zu at a tree's point at %s nodes), "
              "want once", name, csv, cell(&t, r, sc), hits, placed, cell(&t, r, nc));
        shapes++;
    }
    CHECK(f.n_notes == shapes, "%s from %s: %zu notes for %zu tree shapes", name, csv, f.n_notes, shapes);
    printf("%s from %s: %zu points for %zu rows; %zu tree shapes, each named once at its node count\n", name, csv,
           points, t.n_rows, shapes);
    free_canvas(&c);
    free_figure(&f);
    free_table(&t);
}

// A figure's points against its CSVs' rows: the points of the series whose
// label contains `series` (every measured series: "", theory curves and
// reference lines left out) number the rows with a value in column `col`,
// summed over the CSVs, and (compare_mean) their mean y is those values' mean.
static void test_points_match(const char *name, const char *const *paths, size_t n, const char *series,
                              const char *col, int compare_mean) {
    Canvas c;
    Axes ax;
    Figure f;
    size_t rows = 0, points = 0;
    double sum_csv = 0, sum_drawn = 0;
    for (size_t i = 0; i < n; i++) {
        Table t = {0};
        Error e = {.msg = ""};
        int k = read_table(&t, paths[i], &e) ? -1 : find_column(&t, col);
        CHECK(k >= 0, "%s: %s: column %s: %s", name, paths[i], col, e.msg);
        for (size_t r = 0; k >= 0 && r < t.n_rows; r++)
            if (!isnan(num(&t, r, k))) rows++, sum_csv += num(&t, r, k);
        free_table(&t);
    }
    if (render_paths(&c, &ax, &f, name, paths, n)) return;
    for (size_t i = 0; i < f.n_series; i++)
        if (f.series[i].kind != SERIES_HLINE && f.series[i].scales && strstr(f.series[i].label, series) &&
            !strstr(f.series[i].label, "theory"))
            for (size_t j = 0; j < f.series[i].n; j++) points++, sum_drawn += f.series[i].pts[j].y;
    CHECK(points == rows, "%s from %s: %zu points in series \"%s\", %zu rows with %s", name, paths[0], points,
          series, rows, col);
    if (compare_mean)
        CHECK(rows && fabs(sum_drawn / rows - sum_csv / rows) < 1e-9, "%s from %s: mean drawn %g, mean %s %g",
              name, paths[0], points ? sum_drawn / points : NAN, col, rows ? sum_csv / rows : NAN);
    printf("%s from %s%s: %zu points for %zu rows with %s%s\n", name, paths[0], n > 1 ? " ..." : "", points, rows,
           col, compare_mean ? ", the same mean" : "");
    free_canvas(&c);
    free_figure(&f);
}

// test_points_match on each figure not compared above, from the fixtures and docs/
static void test_more_points_match(void) {
    static const char *const dirs[2] = {DIR, "docs"};
    for (int d = 0; d < 2; d++) {
        char p[4][256];
        const char *pp[4] = {p[0], p[1], p[2], p[3]};
        snprintf(p[0], sizeof(p[0]), "%s/sweep_k.csv", dirs[d]);
        test_points_match("speedup_vs_k", pp, 1, "", "speedup", 1); // fixed-K and auto-K rows
        snprintf(p[0], sizeof(p[0]), "%s/sweep_temp.csv", dirs[d]);
        test_points_match("alpha_vs_temperature", pp, 1, "", "alpha", 1);
        snprintf(p[0], sizeof(p[0]), "%s/verify_cost.csv", dirs[d]);
        test_points_match("verify_cost", pp, 1, "", "r", 1);
        snprintf(p[0], sizeof(p[0]), "%s/lenience.csv", dirs[d]);
        test_points_match("lenience", pp, 1, "closed form", "speedup", 1);
        snprintf(p[0], sizeof(p[0]), "%s/train_target.csv", dirs[d]);
        snprintf(p[1], sizeof(p[1]), "%s/train_base.csv", dirs[d]);
        snprintf(p[2], sizeof(p[2]), "%s/train_draft.csv", dirs[d]);
        test_points_match("training_loss", pp, 3, "validation", "val_loss", 1);
        test_points_match("training_loss", pp, 3, ": train", "train_loss", 1);
        snprintf(p[1], sizeof(p[1]), "%s/train_target_dropout.csv", dirs[d]);
        test_points_match("finetune_loss", pp, 2, "validation", "val_loss", 1);
    }
}

// Every figure `plot all docs` draws, from the committed CSVs: each series of
// markers shows at least half of them in its own colour, a filled marker at
// its centre, a ring (drawn where a filled one would hide an earlier
// series') at its right edge: no series hides under another. Before: the
// target's validation curve showed 0 of 17 under the dropout run's, the 110M
// shape's r(n) 0 of 9 under the 325 MB target's, the shipped pair's T = 0
// trees 1 of 6 under the 325 MB target's in trees_tokens. (Where four
// series' r(n) lie within a few pixels, verify_cost shows 5-7 of 9 each.)
static void test_docs_markers_visible(void) {
    for (size_t k = 0; k < N_FIGURES; k++) {
        const FigureSpec *spec = &FIGURES[k];
        char store[MAX_INPUTS][256];
        const char *p[MAX_INPUTS];
        size_t n = 0;
        for (size_t i = 0; i < max_inputs(spec); i++) {
            snprintf(store[n], sizeof(store[n]), "docs/%s", spec->inputs[i]);
            if (file_exists(store[n])) p[n] = store[n], n++;
            else if (i < spec->n_required) n = MAX_INPUTS + 1;
            if (n > MAX_INPUTS) break;
        }
        if (n > MAX_INPUTS || n == 0) {
            printf("%s: skipped, its CSVs are not all in docs/\n", spec->name);
            continue;
        }
        Canvas c;
        Axes ax;
        Figure f;
        if (render_paths(&c, &ax, &f, spec->name, p, n)) continue;
        for (size_t i = 0; i < f.n_series; i++) {
            const Series *s = &f.series[i];
            size_t seen = 0, under = 0;
            if (!s->marker || s->kind != SERIES_XY) continue;
            for (size_t j = 0; j < s->n; j++) {
                int x, y, covered = 0;
                point_pixel(&x, &y, &f, &ax, i, j);
                if (same_color(get_pixel(&c, x, y), s->color)) {
                    seen++;
                    continue;
                }
                // two series may coincide at some points (r(n) of models in DRAM): a marker not
                // seen may lie under another series' marker, within 3 pixels (or under a line)
                for (size_t k = 0; k < f.n_series && !covered; k++)
                    for (size_t m = 0; k != i && m < f.series[k].n && !covered; m++) {
                        int x2, y2;
                        point_pixel(&x2, &y2, &f, &ax, k, m);
                        covered = abs(x2 - x) <= 3 && abs(y2 - y) <= 3;
                    }
                under += covered;
            }
            CHECK(seen >= 1 && 3 * (seen + under) >= s->n, "docs/%s.png: of the %zu markers of \"%s\", %zu show "
                  "and %zu lie under another series' (want a third either way, one at least shown)",
                  spec->name, s->n, s->label, seen, under);
            printf("docs/%s.png: %zu of %zu markers of \"%s\" show, %zu under another series'\n", spec->name,
                   seen, s->n, s->label, under);
        }
        free_canvas(&c);
        free_figure(&f);
    }
}

// Every figure `plot all` draws is linked from a document (a PNG no page
// links is drawn for nobody: six were).
static void test_figures_linked(void) {
    static const char *const pages[] = {"README.md", "docs/PERFORMANCE.md", "docs/TRAINING.md", "docs/PORTING.md"};
    char *text[4];
    for (size_t i = 0; i < 4; i++) {
        Error e = {.msg = ""};
        text[i] = load_text(pages[i], &e);
    }
    for (size_t k = 0; k < N_FIGURES; k++) {
        char link[64];
        const char *where = NULL;
        snprintf(link, sizeof(link), "%s.png)", FIGURES[k].name);
        for (size_t i = 0; i < 4 && !where; i++)
            if (text[i] && strstr(text[i], link)) where = pages[i];
        CHECK(where != NULL, "docs/%s.png is linked from none of README.md, docs/*.md", FIGURES[k].name);
        printf("docs/%s.png: linked from %s\n", FIGURES[k].name, where ? where : "nothing");
    }
    for (size_t i = 0; i < 4; i++) free(text[i]);
}

// Issue 49: every published figure (docs/*.csv) keeps its notes clear of the legend
// and of every marker (trees_speedup's legend hid the "3,1,1" label); a ring drawn
// around another line's point has a legend row; verify_cost marks its rows published
// as 1 after measuring below 1 (CSV check r_below_1) and says so in the legend.
static void test_labels_and_marks(void) {
    size_t figures = 0, notes = 0;
    for (size_t k = 0; k < N_FIGURES; k++) {
        const FigureSpec *spec = &FIGURES[k];
        char paths[MAX_INPUTS][256];
        const char *p[MAX_INPUTS];
        size_t n = 0;
        for (; n < MAX_INPUTS && spec->inputs[n]; n++) {
            snprintf(paths[n], sizeof(paths[n]), "docs/%s", spec->inputs[n]);
            p[n] = paths[n];
        }
        Error e = {.msg = ""};
        Canvas c;
        Axes ax;
        Figure f;
        if (render_from_files(&c, &ax, &f, spec, p, n, &e)) continue; // a CSV not published
        figures++;
        for (size_t i = 0; i < f.n_notes; i++, notes++) {
            const int *b = ax.placed[i + 1];
            int hidden = boxes_meet(ax.placed[0], b[0], b[1], b[2] - b[0], b[3] - b[1]), covers = 0;
            for (size_t s = 0; f.series[f.notes[i].series].kind != SERIES_BARS && s < f.n_series; s++)
                for (size_t j = 0; f.series[s].marker && j < f.series[s].n; j++) {
                    double mx, my;
                    data_to_pixel(&mx, &my, &ax, f.series[s].pts[j].x, f.series[s].pts[j].y);
                    covers += mx > b[0] && mx < b[2] && my > b[1] && my < b[3];
                }
            CHECK(!hidden && !covers, "%s: note \"%s\" at %d,%d..%d,%d %s the legend (%d,%d..%d,%d), covers %d "
                  "markers", spec->name, f.notes[i].text, b[0], b[1], b[2], b[3], hidden ? "under" : "off",
                  ax.placed[0][0], ax.placed[0][1], ax.placed[0][2], ax.placed[0][3], covers);
        }
        int w, h, labelled = 0, rings = any_overlap_ring(&f, &ax);
        for (size_t i = 0; i < f.n_series; i++) labelled += f.series[i].label[0] != '\0';
        CHECK(legend_size(&w, &h, &f, rings) == labelled + rings, "%s: %d legend rows for %d labels and %s",
              spec->name, legend_size(&w, &h, &f, rings), labelled, rings ? "rings" : "no rings");
        if (!strcmp(spec->name, "verify_cost")) {
            size_t marks = 0, flagged = 0; // one mark per CSV row flagged r_below_1
            for (size_t i = 0; i < f.n_notes; i++) marks += !strcmp(f.notes[i].text, FLAG_MARK);
            Error e = {.msg = ""};
            char *csv = load_text("docs/verify_cost.csv", &e);
            for (const char *at = csv; at && (at = strstr(at, "r_below_1")) != NULL; at++) flagged++;
            free(csv);
            CHECK(marks == flagged && (!flagged || (rings && series_labelled(&f, FLAG_MARK ": measured below 1", 1))),
                  "verify_cost: %zu points marked " FLAG_MARK " (want %zu: the CSV's rows flagged r_below_1), "
                  "rings %d, the mark %s in the legend", marks, flagged, rings,
                  series_labelled(&f, FLAG_MARK ": measured below 1", 1) ? "explained" : "not explained");
        }
        free_canvas(&c);
        free_figure(&f);
    }
    CHECK(figures >= 10, "only %zu published figures drawn", figures);
    printf("labels: %zu notes on %zu published figures clear of the legend and the markers; rings in the "
           "legend; verify_cost's clamped r(2) marked\n", notes, figures);
}

// ----------------------------------------------------------------------------
// Errors and `plot all`

static void expect_error(const char *name, const char *input, const char *want1, const char *want2) {
    Error e = {.msg = ""};
    Canvas c;
    Axes ax;
    Figure f;
    const char *p[1] = {input};
    int rc = render_from_files(&c, &ax, &f, find_figure(name), p, 1, &e);
    CHECK(rc < 0 && strstr(e.msg, want1) && strstr(e.msg, want2),
          "%s from %s: rc %d, error \"%s\" (want it to name %s and %s)", name, input, rc,
          e.msg, want1, want2);
    printf("%s from %s: \"%s\"\n", name, input, e.msg);
    free_canvas(&c);
    free_figure(&f);
}

// Errors past the CSVs' contents: too many inputs, an unwritable PNG.
static void test_file_errors(void) {
    const FigureSpec *spec = find_figure("verify_cost");
    const char *two[2] = {DIR "/verify_cost.csv", DIR "/verify_cost.csv"};
    Error e = {.msg = ""};
    int rc = make_figure(spec, two, 2, DIR "/two.png", &e);
    CHECK(rc < 0 && strstr(e.msg, "verify_cost takes 1 to 1 CSV files, not 2"),
          "two CSVs for verify_cost: rc %d, \"%s\"", rc, e.msg);
    printf("verify_cost from two CSVs: \"%s\"\n", e.msg);
    rc = make_figure(spec, two, 1, DIR "/no_such_dir/verify_cost.png", &e);
    CHECK(rc < 0 && strstr(e.msg, "no_such_dir/verify_cost.png: cannot write"),
          "a PNG in a missing folder: rc %d, \"%s\"", rc, e.msg);
    printf("verify_cost into a missing folder: \"%s\"\n", e.msg);
}

static void test_errors(void) {
    write_text(DIR "/no_alpha.csv", "temperature,k,c,r,speedup\n0,1,0.1,1,1.5\n");
    write_text(DIR "/no_k8.csv", "temperature,k,pos1,pos2,pos3,pos4,pos5,pos6,pos7,pos8,pos9,"
                                 "hist0,hist1,hist2,hist3,hist4,hist5,hist6,hist7,hist8,hist9\n"
                                 "0,4,0.9,0.8,0.7,0.6,0.5,,,,,1,2,3,4,5,6,,,,\n");
    write_text(DIR "/bad_number.csv", "model,n,r\nx,1,1\nx,two,1.1\n");
    write_text(DIR "/no_tv.csv", "lenience,lossy,threads,speedup,a,tokens_per_round\n"
                                 "1.00,0,2,1.3,0.6,2\n");
    write_text(DIR "/bad_tv.csv", "lenience,speedup,tv_first_token,tv_measured\n1,1.3,0,0.003\n"
                                  "0.5,1.8,0.16,n/a\n");
    write_text(DIR "/no_l.csv", "lenience,speedup,tv_first_token\n,1.3,0\n");
    write_text(DIR "/no_drafter.csv", "threads,temperature,k,speedup,a,c,tokens_per_round\n"
                                      "2,0.00,4,1.3,0.7,0.14,2.9\n");
    write_text(DIR "/no_c.csv", "drafter,temperature,k,speedup,a,tokens_per_round\n"
                                "lookup,0.00,4,1.05,0.42,1.7\n");
    FILE *fp = fopen(DIR "/many_drafters.csv", "w");
    if (fp) {
        fprintf(fp, "drafter,temperature,k,speedup,a,c,tokens_per_round\n");
        for (int k = 1; k <= MAX_CATEGORIES + 1; k++) fprintf(fp, "lookup,0,%d,1,0.5,0,1.5\n", k);
        fclose(fp);
    }
    expect_error("speedup_vs_k", DIR "/no_such.csv", "no_such.csv", "cannot open");
    expect_error("speedup_vs_k", DIR "/no_alpha.csv", "no_alpha.csv", "\"alpha\"");
    expect_error("acceptance_by_position", DIR "/no_k8.csv", "no_k8.csv", "k = 8");
    expect_error("tokens_per_round", DIR "/no_k8.csv", "no_k8.csv", "k = 8");
    expect_error("verify_cost", DIR "/bad_number.csv", "bad_number.csv:3", "\"two\"");
    expect_error("verify_cost", DIR "/header_only.csv", "header_only.csv", "empty");
    expect_error("lenience", DIR "/no_tv.csv", "no_tv.csv", "no column \"tv_first_token\"");
    expect_error("lenience", DIR "/bad_tv.csv", "bad_tv.csv:3", "\"tv_measured\" holds \"n/a\"");
    expect_error("lenience", DIR "/no_l.csv", "no_l.csv", "no rows with lenience");
    expect_error("lenience", DIR "/header_only.csv", "header_only.csv", "\"lenience\"");
    expect_error("drafters", DIR "/no_drafter.csv", "no_drafter.csv", "no column \"drafter\"");
    expect_error("drafters", DIR "/no_c.csv", "no_c.csv", "no column \"c\"");
    expect_error("drafters", DIR "/many_drafters.csv", "many_drafters.csv", "more than 12");
    test_file_errors();
    char *bad_args[] = {"plot", "verify_cost", DIR "/verify_cost.csv", NULL};
    CHECK(cli(3, bad_args) == 2, "plot FIGURE IN.csv without an output is a usage error");
    char *not_png[] = {"plot", "verify_cost", DIR "/verify_cost.csv", DIR "/sweep_k.csv", NULL};
    CHECK(cli(4, not_png) == 2, "an output that is not .png is refused (it would overwrite a CSV)");
    char *unknown[] = {"plot", "nonsense", "a.csv", "b.png", NULL};
    CHECK(cli(4, unknown) == 2, "an unknown figure is a usage error");
    char *all_extra[] = {"plot", "all", DIR, "extra", NULL};
    CHECK(cli(4, all_extra) == 2, "plot all takes at most one folder");
}

// trees: one line per (target, temperature, kind), 4 points each in x order,
// the trees dashed, a colour per (target, temperature)
static void test_tree_lines(void) {
    Canvas c;
    Axes ax;
    Figure f;
    int rc = render_fixture(&c, &ax, &f, "trees_speedup", DIR "/trees.csv");
    int ordered = 1, dashed = 0;
    for (size_t i = 0; rc == 0 && i + 1 < f.n_series; i++) { // the last: the break-even line
        for (size_t j = 1; j < f.series[i].n; j++) ordered &= f.series[i].pts[j].x > f.series[i].pts[j - 1].x;
        dashed += f.series[i].pattern == DASHED;
    }
    CHECK(rc == 0 && f.n_series == 9 && f.series[0].n == 4 && ordered && dashed == 4 &&
              !strcmp(f.series[1].label, "shipped, T = 0, tree") && f.series[0].color.r == f.series[1].color.r,
          "trees: %zu series (want 8 and the break-even line), 4 points each in x order: %d, %d dashed (want 4)",
          f.n_series, ordered, dashed);
    free_canvas(&c);
    free_figure(&f);
    printf("trees: a line per (target, temperature, chain or tree), x in order, the trees dashed\n");
}

static void test_plot_all(void) {
    remove(DIR "/partial/alpha_vs_temperature.png");
    remove(DIR "/partial/speedup_vs_k.png");
    int rc = plot_all(DIR "/partial");
    CHECK(rc == 0, "plot all on a folder with only sweep_temp.csv: rc %d (want 0: missing CSVs skip)",
          rc);
    CHECK(file_exists(DIR "/partial/alpha_vs_temperature.png") &&
          !file_exists(DIR "/partial/speedup_vs_k.png") &&
          !file_exists(DIR "/partial/lenience.png") && !file_exists(DIR "/partial/drafters.png"),
          "plot all drew alpha_vs_temperature.png and not speedup_vs_k, lenience or drafters.png");
    rc = plot_all(DIR "/broken");
    CHECK(rc == 1, "plot all with a broken verify_cost.csv: rc %d (want 1)", rc);
    remove(DIR "/lenience.png");
    remove(DIR "/drafters.png");
    rc = plot_all(DIR);
    CHECK(rc == 0, "plot all on the full fixtures: rc %d", rc);
    CHECK(file_exists(DIR "/lenience.png") && file_exists(DIR "/drafters.png"),
          "plot all drew lenience.png and drafters.png");
}

int main(void) {
    if (write_fixtures()) {
        printf("FAIL cannot write the fixtures under %s (run from the repository root)\n", DIR);
        return 1;
    }
    test_ticks();
    test_text_boxes();
    test_text_ink();
    test_formula();
    test_reader();
    test_reader_edges();
    static const char *const sweep_k[] = {"sweep_k.csv"}, *const sweep_temp[] = {"sweep_temp.csv"},
                             *const verify[] = {"verify_cost.csv"},
                             *const lenience[] = {"lenience.csv"},
                             *const drafters[] = {"drafters.csv"}, *const trees[] = {"trees.csv"},
                             *const train[] = {"train_target.csv", "train_draft.csv",
                                               "train_base.csv"},
                             *const finetune[] = {"train_target.csv", "train_target_dropout.csv"};
    test_figure("speedup_vs_k", sweep_k, 1, 16);
    test_figure("acceptance_by_position", sweep_k, 1, 16);
    test_figure("tokens_per_round", sweep_k, 1, 18);
    test_figure("alpha_vs_temperature", sweep_temp, 1, 7);
    test_figure("training_loss", train, 3, 30);
    test_figure("finetune_loss", finetune, 2, 20);
    test_figure("verify_cost", verify, 1, 17);
    test_figure("lenience", lenience, 1, 12);
    test_figure("drafters", drafters, 1, 10);
    test_figure("trees_speedup", trees, 1, 24);
    test_figure("trees_tokens", trees, 1, 24);
    static const char *const scale[] = {"scale.csv"};
    test_figure("scale", scale, 1, 11);
    test_scale_log();
    test_tree_lines();
    test_labels_and_marks();
    test_histogram_matches(DIR "/sweep_k.csv");
    test_histogram_matches("docs/sweep_k.csv");
    test_acceptance_matches(DIR "/sweep_k.csv");
    test_acceptance_matches("docs/sweep_k.csv");
    test_drafters_match("drafters", DIR "/drafters.csv");
    test_drafters_match("drafters", DIR "/crowded_drafters.csv");
    test_drafters_match("drafters", "docs/drafters.csv");
    test_drafters_match("drafters_dram", "docs/drafters_dram.csv");
    test_trees_match("trees_speedup", DIR "/trees.csv");
    test_trees_match("trees_tokens", DIR "/trees.csv");
    test_trees_match("trees_speedup", "docs/trees.csv");
    test_trees_match("trees_tokens", "docs/trees.csv");
    test_docs_markers_visible();
    test_figures_linked();
    test_more_points_match();
    test_theory_curve();
    test_lenience_curve();
    test_drafter_bars();
    test_note_placement();
    test_errors();
    test_plot_all();
    return check_summary("test_plot");
}
