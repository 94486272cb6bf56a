// plot.c - the project's figures as PNG files, drawn from the CSVs that
// specdec, the benchmarks and the trainer write.
//
// Everything visible is drawn here, on a plain RGB canvas: antialiased lines,
// markers, bars, dashed reference lines, axes with "nice" ticks (1, 2 or 5
// times a power of ten) or named categories, notes beside data points, and a
// legend; notes and legend go where they hide the least data.
// Two headers come from the system's libstb-dev (Debian: apt-get install
// libstb-dev): stb_easy_font, whose glyphs arrive as rectangles that this file
// fills, and stb_image_write, which encodes the PNG.
//
// CSV columns are found by NAME in the header row, so producers may add or
// reorder columns; empty fields mean "not measured" and are skipped. A
// function that can fail takes an Error, writes its message there and
// returns -1; the command line (or a test) decides what to do with it.
//
// The file reads top to bottom:
//   errors -> canvas -> text -> primitives -> figures in memory -> axes ->
//   drawing -> CSV reading -> grouping rows -> figures -> command line.
//
// Build: make plot (cc -std=c11 -O2 figures/plot.c -lm). ./plot with no
// arguments prints the usage.
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../model.h" // predicted_speedup: the formula specdec prints

// Both stb headers define their functions static, and we call only some of
// them (the PNG writer; the font's print and width): a compiler may warn about
// the others being unused, and, where STB_INCLUDE is not a system directory,
// gcc about stb_easy_font's brace style. Those two warnings are silenced for
// the headers alone (push/pop), never for our own code.
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wmissing-braces"
#endif
#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STB_IMAGE_WRITE_STATIC
#include <stb/stb_image_write.h>
#include <stb/stb_easy_font.h>
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

#define FIG_W 800
#define FIG_H 500

// ----------------------------------------------------------------------------
// Errors: what went wrong, naming the file and column

typedef struct {
    char msg[1024];
} Error;

// Writes the message into *e; returns -1 to pass up.
static int fail(Error *e, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
    va_end(ap);
    return -1;
}

// ----------------------------------------------------------------------------
// Canvas: RGB pixels, row by row from the top-left, with a clip rectangle

typedef struct {
    unsigned char r, g, b;
} Color;

static const Color WHITE = {255, 255, 255}, INK = {25, 25, 25}, GRID = {228, 228, 228},
                   FRAME = {90, 90, 90}, REFERENCE = {120, 120, 120}, GUIDE = {70, 70, 70};
// distinct, colour-blind-friendly series colours (one per temperature or model)
#define N_PALETTE 6
static const Color PALETTE[N_PALETTE] = {
    {31, 119, 180}, {230, 115, 0}, {44, 160, 44}, {200, 40, 40}, {140, 90, 190}, {140, 86, 75}};

typedef struct {
    int w, h;
    unsigned char *px;                      // w*h RGB triples
    int clip_x0, clip_y0, clip_x1, clip_y1; // drawing outside [x0,x1) x [y0,y1) is dropped
} Canvas;

// Restricts drawing to [x0,x1) x [y0,y1), within the canvas.
static void set_clip(Canvas *c, int x0, int y0, int x1, int y1) {
    c->clip_x0 = x0 < 0 ? 0 : x0;
    c->clip_y0 = y0 < 0 ? 0 : y0;
    c->clip_x1 = x1 > c->w ? c->w : x1;
    c->clip_y1 = y1 > c->h ? c->h : y1;
}

// A w x h canvas, all white.
static int build_canvas(Canvas *c, int w, int h, Error *e) {
    size_t bytes = (size_t)w * (size_t)h * 3;
    c->w = w;
    c->h = h;
    c->px = malloc(bytes);
    if (!c->px) return fail(e, "out of memory for a %dx%d canvas", w, h);
    memset(c->px, 255, bytes);
    set_clip(c, 0, 0, w, h);
    return 0;
}

static void free_canvas(Canvas *c) {
    free(c->px);
    c->px = NULL;
}

static int inside_clip(const Canvas *c, int x, int y) {
    return x >= c->clip_x0 && x < c->clip_x1 && y >= c->clip_y0 && y < c->clip_y1;
}

// Mixes col into pixel (x, y) with weight a in [0, 1]: antialiasing's coverage.
static void blend_pixel(Canvas *c, int x, int y, Color col, double a) {
    if (!inside_clip(c, x, y) || a <= 0) return;
    if (a > 1) a = 1;
    unsigned char *p = c->px + 3 * ((size_t)y * (size_t)c->w + (size_t)x);
    p[0] = (unsigned char)lround(p[0] + a * (col.r - p[0]));
    p[1] = (unsigned char)lround(p[1] + a * (col.g - p[1]));
    p[2] = (unsigned char)lround(p[2] + a * (col.b - p[2]));
}

static Color get_pixel(const Canvas *c, int x, int y) {
    const unsigned char *p = c->px + 3 * ((size_t)y * (size_t)c->w + (size_t)x);
    Color col = {p[0], p[1], p[2]};
    return col;
}

static int same_color(Color a, Color b) { return a.r == b.r && a.g == b.g && a.b == b.b; }

// col moved a fraction t of the way to white: a lighter shade of the same hue.
static Color tint(Color col, double t) {
    Color out = {(unsigned char)lround(col.r + t * (255 - col.r)),
                 (unsigned char)lround(col.g + t * (255 - col.g)),
                 (unsigned char)lround(col.b + t * (255 - col.b))};
    return out;
}

// col moved a fraction t of the way to black: a darker shade (text in a series' colour).
static Color shade(Color col, double t) {
    Color out = {(unsigned char)lround(col.r * (1 - t)), (unsigned char)lround(col.g * (1 - t)),
                 (unsigned char)lround(col.b * (1 - t))};
    return out;
}

static int write_png(const Canvas *c, const char *path, Error *e) {
    if (!stbi_write_png(path, c->w, c->h, 3, c->px, c->w * 3))
        return fail(e, "%s: cannot write the PNG (does its directory exist?)", path);
    return 0;
}

// Fills [x0,x1) x [y0,y1).
static void fill_rect(Canvas *c, int x0, int y0, int x1, int y1, Color col) {
    for (int y = y0; y < y1; y++)
        for (int x = x0; x < x1; x++) blend_pixel(c, x, y, col, 1);
}

// ----------------------------------------------------------------------------
// Text: stb_easy_font's glyphs, scaled and antialiased
//
// stb_easy_font builds each glyph from quads (four vertices each) that are
// axis-aligned rectangles on a grid of font units: capitals and digits fill
// rows 0..6, descenders reach row 9, and every glyph's advance is its ink plus
// 2 units. Here a glyph's quads are first merged into a grid of inked cells;
// each cell, scaled, covers canvas pixels by the area it overlaps them, so
// text at any scale comes out antialiased.

#define CAP_H 7         // capitals and digits, in font units
#define TEXT_H 10       // with descenders (g, p, y)
#define GLYPH_W 8       // the widest glyph's ink ('@': 7 units), and room
#define TEXT_SCALE 1.5  // pixels per font unit: tick labels, axis labels, legend
#define TITLE_SCALE 2.5
#define GLYPH_PX 32     // a glyph's pixels each way, at scales up to 3
#define GLYPH_QUADS 16  // room for any glyph's quads (the most, 'X', takes 11)

// One vertex of stb_easy_font's output: x, y, z and an RGBA colour (unused).
typedef struct {
    float x, y, z;
    stb_easy_font_color color;
} FontVertex;

// Where text goes: its origin (whole pixels), pixels per font unit, whether
// it reads upward, and its colour (NULL: INK).
typedef struct {
    int x, y;
    double scale;
    int vertical;
    const Color *ink;
} TextPen;

// stb_easy_font draws printable ASCII; any other byte (UTF-8) shows as '?'.
static char printable(char ch) { return ch >= 32 && ch <= 126 ? ch : '?'; }

static int glyph_advance(char ch) {
    char glyph[2] = {printable(ch), '\0'};
    return stb_easy_font_width(glyph);
}

// The inked width of s (up to a line break) in pixels: no gap after the last glyph.
static int text_width(const char *s, double scale) {
    int units = 0;
    for (; *s && *s != '\n'; s++) units += glyph_advance(*s);
    return units > 2 ? (int)lround((units - 2) * scale) : 0;
}

// Marks the font-unit cells that the glyph's quads cover (some quads overlap).
static void glyph_cells(unsigned char cells[TEXT_H][GLYPH_W], char ch) {
    char glyph[2] = {printable(ch), '\0'};
    FontVertex v[GLYPH_QUADS * 4];
    int n = stb_easy_font_print(0, 0, glyph, NULL, v, (int)sizeof(v));
    memset(cells, 0, TEXT_H * GLYPH_W);
    for (const FontVertex *q = v; q < v + 4 * n; q += 4) // q[0] top-left, q[2] bottom-right
        for (int y = (int)q[0].y; y < (int)q[2].y && y < TEXT_H; y++)
            for (int x = (int)q[0].x; x < (int)q[2].x && x < GLYPH_W; x++) cells[y][x] = 1;
}

// Adds to cov the area by which [x0,x1) x [y0,y1) overlaps each pixel.
static void add_coverage(float cov[GLYPH_PX][GLYPH_PX], double x0, double y0, double x1,
                         double y1) {
    for (int y = (int)y0; y < (int)ceil(y1) && y < GLYPH_PX; y++)
        for (int x = (int)x0; x < (int)ceil(x1) && x < GLYPH_PX; x++)
            cov[y][x] += (float)((fmin(x + 1, x1) - fmax(x, x0)) * (fmin(y + 1, y1) - fmax(y, y0)));
}

// Blends a glyph's coverage into the canvas: text-space pixel (tx, ty), tx
// counted from the pen's origin, lands on (x + tx, y + ty), or, for vertical
// text turned a quarter turn to read upward, on (x + ty, y - 1 - tx).
static void blend_glyph(Canvas *c, const TextPen *p, float cov[GLYPH_PX][GLYPH_PX], int tx0) {
    Color ink = p->ink ? *p->ink : INK;
    for (int ty = 0; ty < GLYPH_PX; ty++)
        for (int tx = tx0; tx < tx0 + GLYPH_PX; tx++) {
            double a = cov[ty][tx - tx0];
            if (p->vertical) blend_pixel(c, p->x + ty, p->y - 1 - tx, ink, a);
            else blend_pixel(c, p->x + tx, p->y + ty, ink, a);
        }
}

// One glyph, its left edge `pen` pixels along the text from the origin.
static void draw_glyph(Canvas *c, const TextPen *p, char ch, double pen) {
    unsigned char cells[TEXT_H][GLYPH_W];
    float cov[GLYPH_PX][GLYPH_PX] = {{0}};
    int tx0 = (int)floor(pen);
    double k = p->scale, left = pen - tx0;
    glyph_cells(cells, ch);
    for (int y = 0; y < TEXT_H; y++)
        for (int x = 0; x < GLYPH_W; x++)
            if (cells[y][x])
                add_coverage(cov, left + k * x, k * y, left + k * (x + 1), k * (y + 1));
    blend_glyph(c, p, cov, tx0);
}

// Sets s (up to a line break) from the pen's origin: the top-left
// corner of horizontal text, the bottom-left of vertical text (the y-axis label).
static void draw_text(Canvas *c, const TextPen *p, const char *s) {
    double pen = 0;
    for (; *s && *s != '\n'; s++) {
        draw_glyph(c, p, *s, pen);
        pen += p->scale * glyph_advance(*s);
    }
}

// Horizontal text in colour *ink (NULL: INK) placed by an anchor: ax, ay in
// [0, 1] pick the point of the text's box (width by cap height) that lands on
// (x, y); 0.5, 0.5 centres it.
static void draw_inked_label(Canvas *c, double x, double y, double ax, double ay, const char *s,
                             double scale, const Color *ink) {
    TextPen p = {.x = (int)lround(x - ax * text_width(s, scale)),
                 .y = (int)lround(y - ay * CAP_H * scale), .scale = scale, .ink = ink};
    draw_text(c, &p, s);
}

static void draw_label(Canvas *c, double x, double y, double ax, double ay, const char *s,
                       double scale) {
    draw_inked_label(c, x, y, ax, ay, s, scale, NULL);
}

// Text in lines (split by '\n', set at TEXT_SCALE): notes, category names.
#define LINE_ADVANCE 17 // pixels from one line's top to the next's

// The line after s's first, or NULL.
static const char *next_line(const char *s) {
    const char *nl = strchr(s, '\n');
    return nl ? nl + 1 : NULL;
}

static int count_lines(const char *s) {
    int n = 0;
    for (; s; s = next_line(s)) n++;
    return n;
}

// The widest line's width, and the height from the first line's top to the
// last one's descenders, in pixels.
static int block_width(const char *s) {
    int w = 0;
    for (; s; s = next_line(s))
        if (text_width(s, TEXT_SCALE) > w) w = text_width(s, TEXT_SCALE);
    return w;
}

static int block_height(const char *s) {
    return (count_lines(s) - 1) * LINE_ADVANCE + (int)ceil(TEXT_H * TEXT_SCALE);
}

// Each line of s centred on x, the first line's top at y, in *ink (NULL: INK).
static void draw_block(Canvas *c, double x, double y, const char *s, const Color *ink) {
    for (; s; s = next_line(s), y += LINE_ADVANCE)
        draw_inked_label(c, x, y, 0.5, 0, s, TEXT_SCALE, ink);
}

// ----------------------------------------------------------------------------
// Primitives: antialiased lines, dashes, markers

static void stroke_rect(Canvas *c, int x0, int y0, int x1, int y1, Color col) {
    fill_rect(c, x0, y0, x1, y0 + 1, col);
    fill_rect(c, x0, y1 - 1, x1, y1, col);
    fill_rect(c, x0, y0, x0 + 1, y1, col);
    fill_rect(c, x1 - 1, y0, x1, y1, col);
}

// Coverage of pixel (x, y) by a pen of half-width h along segment p0-p1: how
// far the pixel's centre lies inside the stroke, clamped to [0, 1]. The
// distance to the segment (not the line) gives round ends and joins for free.
static double segment_coverage(int x, int y, double x0, double y0, double x1, double y1, double h) {
    double dx = x1 - x0, dy = y1 - y0, px = x + 0.5 - x0, py = y + 0.5 - y0;
    double len2 = dx * dx + dy * dy, t = len2 > 0 ? (px * dx + py * dy) / len2 : 0;
    t = t < 0 ? 0 : t > 1 ? 1 : t;
    double ex = px - t * dx, ey = py - t * dy, cover = h + 0.5 - sqrt(ex * ex + ey * ey);
    return cover < 0 ? 0 : cover > 1 ? 1 : cover;
}

// An antialiased line `width` pixels wide, any slope (coordinates in pixels,
// pixel (x, y) covering [x, x+1) x [y, y+1)).
static void draw_line(Canvas *c, double x0, double y0, double x1, double y1, double width,
                      Color col) {
    double h = width / 2;
    int xa = (int)floor(fmin(x0, x1) - h - 1), xb = (int)ceil(fmax(x0, x1) + h + 1);
    int ya = (int)floor(fmin(y0, y1) - h - 1), yb = (int)ceil(fmax(y0, y1) + h + 1);
    if (xa < c->clip_x0) xa = c->clip_x0;
    if (ya < c->clip_y0) ya = c->clip_y0;
    if (xb > c->clip_x1) xb = c->clip_x1;
    if (yb > c->clip_y1) yb = c->clip_y1;
    for (int y = ya; y < yb; y++)
        for (int x = xa; x < xb; x++)
            blend_pixel(c, x, y, col, segment_coverage(x, y, x0, y0, x1, y1, h));
}

// Line patterns: reference lines are dashed or dotted so they read as "not data".
enum { SOLID, DASHED, DOTTED };
static const double DASH_ON[3] = {0, 7, 1.5}, DASH_OFF[3] = {0, 5, 4};

// A line drawn in `pattern`: DASH_ON pixels on, DASH_OFF off, repeated.
static void draw_styled_line(Canvas *c, double x0, double y0, double x1, double y1, double width,
                             Color col, int pattern) {
    double len = hypot(x1 - x0, y1 - y0), dash = DASH_ON[pattern], gap = DASH_OFF[pattern];
    if (pattern == SOLID) {
        draw_line(c, x0, y0, x1, y1, width, col);
        return;
    }
    if (len <= 0) return;
    double ux = (x1 - x0) / len, uy = (y1 - y0) / len;
    for (double s = 0; s < len; s += dash + gap) {
        double e = fmin(s + dash, len);
        draw_line(c, x0 + ux * s, y0 + uy * s, x0 + ux * e, y0 + uy * e, width, col);
    }
}

static void fill_circle(Canvas *c, double cx, double cy, double r, Color col) {
    for (int y = (int)floor(cy - r - 1); y <= (int)ceil(cy + r + 1); y++)
        for (int x = (int)floor(cx - r - 1); x <= (int)ceil(cx + r + 1); x++) {
            double d = hypot(x + 0.5 - cx, y + 0.5 - cy);
            blend_pixel(c, x, y, col, r + 0.5 - d);
        }
}

// An antialiased ring: radius r to the middle of its pen, `width` pixels wide.
static void stroke_circle(Canvas *c, double cx, double cy, double r, double width, Color col) {
    for (int y = (int)floor(cy - r - width); y <= (int)ceil(cy + r + width); y++)
        for (int x = (int)floor(cx - r - width); x <= (int)ceil(cx + r + width); x++) {
            double d = hypot(x + 0.5 - cx, y + 0.5 - cy);
            blend_pixel(c, x, y, col, width / 2 + 0.5 - fabs(d - r));
        }
}

enum { MARK_NONE, MARK_CIRCLE, MARK_SQUARE, MARK_RING };
#define MARK_R 4.0
#define RING_R 7.0     // a ring is drawn around a filled marker at the same spot, not over it
#define RING_WIDTH 2.5 // its pen: the pixels at distance RING_R are fully covered

// A marker centred on (cx, cy). Filled ones get a white halo, so markers stand
// out from the lines through them and from each other; a ring is left open,
// so that a filled marker inside it still shows.
static void draw_marker(Canvas *c, double cx, double cy, int marker, Color col) {
    if (marker == MARK_RING) stroke_circle(c, cx, cy, RING_R, RING_WIDTH, col);
    else if (marker == MARK_CIRCLE) {
        fill_circle(c, cx, cy, MARK_R + 1.5, WHITE);
        fill_circle(c, cx, cy, MARK_R, col);
    } else if (marker == MARK_SQUARE) {
        int x = (int)floor(cx), y = (int)floor(cy), h = (int)MARK_R - 1;
        fill_rect(c, x - h - 2, y - h - 2, x + h + 3, y + h + 3, WHITE);
        fill_rect(c, x - h, y - h, x + h + 1, y + h + 1, col);
    }
}

// ----------------------------------------------------------------------------
// Figures in memory: series of points, and how each is drawn

typedef struct {
    double x, y;
} Point;

enum { SERIES_XY, SERIES_BARS, SERIES_HLINE };

typedef struct {
    char label[96];      // legend text; "" keeps the series out of the legend
    Color color;
    int kind;            // SERIES_XY, SERIES_BARS, or SERIES_HLINE: y = pts[0].y across the plot
    double width;        // line width in pixels; 0 draws no line (points only)
    int pattern, marker; // SOLID, DASHED or DOTTED; MARK_NONE, _CIRCLE, _SQUARE or _RING
    int scales;          // 1: the axes are chosen to show it (0 for guide lines like r = n)
    Point *pts;
    size_t n, cap;
} Series;

// Text beside one data point: above a bar's top, or beside a marker on the
// side where it hides the least (drawing a figure decides where).
typedef struct {
    size_t series, point; // the point it belongs to
    char text[64];        // one or more lines, split by '\n'
} Note;

#define MAX_SERIES 16
#define MAX_NOTES 32
#define MAX_CATEGORIES 12
typedef struct {
    char title[96], xlabel[96], ylabel[96];
    Series series[MAX_SERIES];
    size_t n_series;
    Note notes[MAX_NOTES];
    size_t n_notes;
    char categories[MAX_CATEGORIES][48]; // if any: x = 1, 2, ... are these, named below
    size_t n_categories;                 // the axis ('\n' splits a name into lines)
    int y_unit; // 1: y shows [0, 1] whatever the data (a probability)
    int y_zero; // 1: the y range reaches down (or up) to 0
    int log_xy; // 1: both axes logarithmic: points are log10 of the data, ticks at powers of ten
} Figure;

static void build_figure(Figure *f, const char *title, const char *xlabel, const char *ylabel) {
    memset(f, 0, sizeof(*f));
    snprintf(f->title, sizeof(f->title), "%s", title);
    snprintf(f->xlabel, sizeof(f->xlabel), "%s", xlabel);
    snprintf(f->ylabel, sizeof(f->ylabel), "%s", ylabel);
}

static void free_figure(Figure *f) {
    for (size_t i = 0; i < f->n_series; i++) free(f->series[i].pts);
    f->n_series = 0;
}

// A new, empty series drawn as `kind` (the caller sets width, marker, ...).
static Series *add_series(Figure *f, const char *label, Color col, int kind, Error *e) {
    if (f->n_series == MAX_SERIES) {
        fail(e, "figure \"%s\": more than %d series", f->title, MAX_SERIES);
        return NULL;
    }
    Series *s = &f->series[f->n_series++];
    memset(s, 0, sizeof(*s));
    snprintf(s->label, sizeof(s->label), "%s", label);
    s->color = col;
    s->kind = kind;
    s->scales = 1;
    return s;
}

// Appends (x, y). A point with a missing (NaN) coordinate is left out, and so
// is one beyond +-1e15 (no measurement here is that large), which keeps every
// range and pixel computation finite.
static int add_point(Series *s, double x, double y, Error *e) {
    if (!(fabs(x) <= 1e15) || !(fabs(y) <= 1e15)) return 0;
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 16;
        Point *p = realloc(s->pts, cap * sizeof(Point));
        if (!p) return fail(e, "out of memory for %zu points", cap);
        s->pts = p;
        s->cap = cap;
    }
    s->pts[s->n].x = x;
    s->pts[s->n].y = y;
    s->n++;
    return 0;
}

// Appends (x, y) to s and, if the point is kept, a note beside it ("": none).
// A note on point `point` of series `series` (text "": none).
static int add_note(Figure *f, size_t series, size_t point, const char *text, Error *e) {
    if (!text[0]) return 0;
    if (f->n_notes == MAX_NOTES)
        return fail(e, "figure \"%s\": more than %d notes", f->title, MAX_NOTES);
    Note *n = &f->notes[f->n_notes++];
    *n = (Note){.series = series, .point = point};
    snprintf(n->text, sizeof(n->text), "%s", text);
    return 0;
}

static int add_noted_point(Figure *f, Series *s, double x, double y, const char *text, Error *e) {
    size_t before = s->n;
    if (add_point(s, x, y, e)) return -1;
    return s->n == before ? 0 : add_note(f, (size_t)(s - f->series), s->n - 1, text, e);
}

// Category x = 1, 2, ... of a categorical x axis is named by the call's order.
static int add_category(Figure *f, const char *name, Error *e) {
    if (f->n_categories == MAX_CATEGORIES)
        return fail(e, "figure \"%s\": more than %d categories", f->title, MAX_CATEGORIES);
    snprintf(f->categories[f->n_categories++], sizeof(f->categories[0]), "%s", name);
    return 0;
}

static int by_x(const void *a, const void *b) {
    double xa = ((const Point *)a)->x, xb = ((const Point *)b)->x;
    return (xa > xb) - (xa < xb);
}

// Lines join points in x order, whatever order the CSV rows came in.
static void sort_by_x(Series *s) {
    if (s->n > 1) qsort(s->pts, s->n, sizeof(Point), by_x);
}

// A dashed horizontal reference line across the whole plot.
static int add_hline(Figure *f, double y, const char *label, Error *e) {
    Series *s = add_series(f, label, REFERENCE, SERIES_HLINE, e);
    if (!s) return -1;
    s->width = 1.5;
    s->pattern = DASHED;
    return add_point(s, 0, y, e);
}

// ----------------------------------------------------------------------------
// Axes: data ranges, nice ticks, the data -> pixel mapping

typedef struct {
    int left, top, right, bottom;  // the plot area in pixels: [left, right) x [top, bottom)
    double xmin, xmax, ymin, ymax; // the data range it shows
    double xstep, ystep;           // tick spacing
    int tick_lines;                // lines in the x tick labels (category names: 1 or more)
    int log_xy;                    // the figure's: tick v is labelled 10^v
    int placed[MAX_NOTES + 1][4];  // where the legend (0; all 0: none) and note i (i + 1) went: x0, y0, x1, y1
} Axes;

// The tick spacing for `span`: the smallest of 1, 2 or 5 times a power of ten
// that needs at most max_ticks intervals. Round steps give readable labels.
static double nice_step(double span, int max_ticks) {
    if (!(span > 0) || !isfinite(span) || max_ticks < 1) return 1;
    double raw = span / max_ticks, mag = pow(10, floor(log10(raw))), f = raw / mag;
    double m = f <= 1 + 1e-9 ? 1 : f <= 2 + 1e-9 ? 2 : f <= 5 + 1e-9 ? 5 : 10;
    return m * mag;
}

// The multiples of step in [lo, hi] (at most cap of them); returns how many.
static size_t tick_values(double *v, size_t cap, double lo, double hi, double step) {
    size_t n = 0;
    for (double i = ceil(lo / step - 1e-9); n < cap && i * step <= hi + 1e-9 * step; i++)
        v[n++] = i * step;
    return n;
}

// A tick label with just the decimals the step needs ("0.2", not "0.200000"); on a log
// axis (log) the power of ten v stands for ("0.01", "1000").
static void format_tick(char *buf, size_t cap, double v, double step, int log) {
    if (log) {
        snprintf(buf, cap, "%g", pow(10, v));
        return;
    }
    int decimals = step >= 1 ? 0 : (int)ceil(-log10(step) - 1e-9);
    if (fabs(v) < step * 1e-6) v = 0; // no "-0"
    snprintf(buf, cap, "%.*f", decimals, v);
}

// Where data point (x, y) lands on the canvas, in (fractional) pixels. Points
// far outside the plot (guide lines) are pulled in to +-1e5 pixels, so that
// converting to int never overflows.
static void data_to_pixel(double *px, double *py, const Axes *ax, double x, double y) {
    *px = ax->left + (x - ax->xmin) / (ax->xmax - ax->xmin) * (ax->right - ax->left);
    *py = ax->bottom - (y - ax->ymin) / (ax->ymax - ax->ymin) * (ax->bottom - ax->top);
    *px = fmax(-1e5, fmin(1e5, *px));
    *py = fmax(-1e5, fmin(1e5, *py));
}

// The x distance between neighbouring bars' centres: the smallest gap between
// the x values of the bar series (1 when there is only one value).
static double bar_spacing(const Figure *f) {
    double gap = INFINITY;
    for (size_t i = 0; i < f->n_series; i++) {
        const Series *s = &f->series[i];
        for (size_t a = 0; s->kind == SERIES_BARS && a < s->n; a++)
            for (size_t b = 0; b < s->n; b++) {
                double d = fabs(s->pts[a].x - s->pts[b].x);
                if (d > 1e-12 && d < gap) gap = d;
            }
    }
    return isfinite(gap) ? gap : 1;
}

// Series i's bar at x spans [*x0, *x1] in data units: the bar series stand
// side by side, together filling 80% of the spacing.
static void bar_span(double *x0, double *x1, const Figure *f, size_t i, double x) {
    size_t n_bars = 0, slot = 0;
    for (size_t j = 0; j < f->n_series; j++)
        if (f->series[j].kind == SERIES_BARS) {
            if (j < i) slot++;
            n_bars++;
        }
    double group = 0.8 * bar_spacing(f), w = group / (double)(n_bars ? n_bars : 1);
    *x0 = x - group / 2 + (double)slot * w;
    *x1 = *x0 + w;
}

// A data range: [xmin, xmax] x [ymin, ymax].
typedef struct {
    double xmin, xmax, ymin, ymax;
} Range;

// Widens r to take in series i's point j (a bar: its width, and its base at 0).
static void extend_range(Range *r, const Figure *f, size_t i, size_t j) {
    const Series *s = &f->series[i];
    double x0 = s->pts[j].x, x1 = x0, y = s->pts[j].y;
    if (s->kind == SERIES_BARS) bar_span(&x0, &x1, f, i, s->pts[j].x);
    if (s->kind != SERIES_HLINE) {
        r->xmin = fmin(r->xmin, x0);
        r->xmax = fmax(r->xmax, x1);
    }
    r->ymin = fmin(r->ymin, s->kind == SERIES_BARS ? fmin(y, 0) : y);
    r->ymax = fmax(r->ymax, s->kind == SERIES_BARS ? fmax(y, 0) : y);
}

// The data's bounding box over the series that scale. Returns how many data
// points (reference lines not counted).
static size_t data_range(Range *r, const Figure *f) {
    size_t n = 0;
    r->xmin = r->ymin = INFINITY;
    r->xmax = r->ymax = -INFINITY;
    for (size_t i = 0; i < f->n_series; i++) {
        const Series *s = &f->series[i];
        n += s->kind == SERIES_HLINE ? 0 : s->n;
        for (size_t j = 0; s->scales && j < s->n; j++) extend_range(r, f, i, j);
    }
    return n;
}

// Widens [*lo, *hi] by 4% a side so markers at the extremes are not cut by
// the frame; a side that is exactly 0 (bars' base) stays put when keep_zero.
static void pad_range(double *lo, double *hi, int keep_zero) {
    if (!isfinite(*lo) || !isfinite(*hi)) {
        *lo = 0;
        *hi = 1;
    }
    if (*hi - *lo < 1e-12) {
        double d = fabs(*lo) > 1e-12 ? fabs(*lo) * 0.1 : 1;
        *lo -= d;
        *hi += d;
    }
    double pad = 0.04 * (*hi - *lo);
    if (!(keep_zero && *lo == 0)) *lo -= pad;
    if (!(keep_zero && *hi == 0)) *hi += pad;
}

// The width of the widest y tick label, which sets the left margin.
static int widest_y_label(const Axes *ax) {
    double v[64];
    char buf[32];
    int w = 0;
    size_t n = tick_values(v, 64, ax->ymin, ax->ymax, ax->ystep);
    for (size_t i = 0; i < n; i++) {
        format_tick(buf, sizeof(buf), v[i], ax->ystep, ax->log_xy);
        int t = text_width(buf, TEXT_SCALE);
        if (t > w) w = t;
    }
    return w;
}

// The range a figure shows: its data's, from 0 for bars (or y_zero), [0, 1]
// for y_unit, padded; a categorical x axis runs from 0.5 to n + 0.5.
static void shown_range(Range *r, const Figure *f) {
    int from_zero = f->y_zero;
    data_range(r, f);
    for (size_t i = 0; i < f->n_series; i++) from_zero |= f->series[i].kind == SERIES_BARS;
    if (from_zero) {
        r->ymin = fmin(r->ymin, 0);
        r->ymax = fmax(r->ymax, 0);
    }
    if (f->y_unit) {
        r->ymin = 0;
        r->ymax = 1;
    }
    pad_range(&r->xmin, &r->xmax, 0);
    pad_range(&r->ymin, &r->ymax, from_zero && !f->y_unit);
    if (f->log_xy) { // whole decades
        r->xmin = floor(r->xmin), r->xmax = ceil(r->xmax), r->ymin = floor(r->ymin), r->ymax = ceil(r->ymax);
    }
    if (f->n_categories) {
        r->xmin = 0.5;
        r->xmax = (double)f->n_categories + 0.5;
    }
}

#define NOTE_GAP 5 // pixels between a note and its point (or its marker's edge)
#define NOTE_PAD 2 // white around a note's text

// The pixels the notes above bars need, with their gap and padding: the
// tallest note's, times how many stack (bar_note_boxes) where a note is wider
// than a bar of a plot w pixels wide (less the widest left margin) over r's x range.
static int bar_note_room(const Figure *f, const Range *r, int w) {
    int room = 0, widest = 0, n_bars = 0;
    for (size_t i = 0; i < f->n_notes; i++) {
        int h = block_height(f->notes[i].text) + NOTE_GAP + 2 * NOTE_PAD;
        if (f->series[f->notes[i].series].kind != SERIES_BARS) continue;
        if (h > room) room = h;
        if (block_width(f->notes[i].text) > widest) widest = block_width(f->notes[i].text);
    }
    for (size_t i = 0; i < f->n_series; i++) n_bars += f->series[i].kind == SERIES_BARS;
    if (room == 0 || n_bars == 0) return room;
    double bar_px = 0.8 * bar_spacing(f) / n_bars / (r->xmax - r->xmin) * (w - 24 - 90);
    int stack = (int)ceil((widest + 2 * NOTE_PAD + 1) / fmax(bar_px, 1));
    if (stack > n_bars) stack = n_bars; // notes of one category's bars stack; the next category's are clear
    return room * (stack > 1 ? stack : 1);
}

// Chooses ranges and ticks from the data, then the plot area inside a w x h
// canvas: room for the title above, tick labels (a category's name may take
// several lines) and axis labels left and below, and for the notes above bars.
static void layout_axes(Axes *ax, const Figure *f, int w, int h) {
    Range r;
    int lines = 1, top = 46, bottom, room;
    for (size_t i = 0; i < f->n_categories; i++)
        if (count_lines(f->categories[i]) > lines) lines = count_lines(f->categories[i]);
    bottom = h - 50 - (lines - 1) * LINE_ADVANCE;
    shown_range(&r, f);
    room = bar_note_room(f, &r, w);
    if (room > 0 && room < (bottom - top) / 2) // raise the top: the room stays free of data
        r.ymax += (r.ymax - r.ymin) * room / (bottom - top - room);
    *ax = (Axes){.xmin = r.xmin, .xmax = r.xmax, .ymin = r.ymin, .ymax = r.ymax,
                 .xstep = f->n_categories || f->log_xy ? 1 : nice_step(r.xmax - r.xmin, 10),
                 .ystep = f->log_xy ? 1 : nice_step(r.ymax - r.ymin, 6), .top = top, .bottom = bottom,
                 .right = w - 24, .tick_lines = lines, .log_xy = f->log_xy};
    ax->left = 12 + (int)ceil(TEXT_H * TEXT_SCALE) + 12 + widest_y_label(ax) + 10;
}

// ----------------------------------------------------------------------------
// Drawing a figure: grid, series, frame and ticks, labels, notes, legend

// Grid lines at the ticks; none across a categorical x axis.
static void draw_grid(Canvas *c, const Axes *ax, const Figure *f) {
    double v[64], px, py;
    size_t n = f->n_categories ? 0 : tick_values(v, 64, ax->xmin, ax->xmax, ax->xstep);
    for (size_t i = 0; i < n; i++) {
        data_to_pixel(&px, &py, ax, v[i], ax->ymin);
        fill_rect(c, (int)floor(px), ax->top, (int)floor(px) + 1, ax->bottom, GRID);
    }
    n = tick_values(v, 64, ax->ymin, ax->ymax, ax->ystep);
    for (size_t i = 0; i < n; i++) {
        data_to_pixel(&px, &py, ax, ax->xmin, v[i]);
        fill_rect(c, ax->left, (int)floor(py), ax->right, (int)floor(py) + 1, GRID);
    }
}

// The x ticks below the frame, labelled with their values or, on a
// categorical axis (ticks at 1, 2, ...), with the categories' names.
static void draw_x_ticks(Canvas *c, const Axes *ax, const Figure *f) {
    double v[64], px, py;
    char buf[32];
    size_t n = tick_values(v, 64, ax->xmin, ax->xmax, ax->xstep);
    for (size_t i = 0; i < n; i++) {
        data_to_pixel(&px, &py, ax, v[i], ax->ymin);
        fill_rect(c, (int)floor(px), ax->bottom + 1, (int)floor(px) + 1, ax->bottom + 6, FRAME);
        size_t k = (size_t)lround(v[i]) - 1;
        if (f->n_categories && k < f->n_categories) {
            draw_block(c, floor(px) + 0.5, ax->bottom + 10, f->categories[k], NULL);
            continue;
        }
        format_tick(buf, sizeof(buf), v[i], ax->xstep, ax->log_xy);
        draw_label(c, floor(px) + 0.5, ax->bottom + 10, 0.5, 0, buf, TEXT_SCALE);
    }
}

// The frame around the plot area, tick marks outside it, and their labels.
static void draw_ticks(Canvas *c, const Axes *ax, const Figure *f) {
    double v[64], px, py;
    char buf[32];
    stroke_rect(c, ax->left - 1, ax->top - 1, ax->right + 1, ax->bottom + 1, FRAME);
    draw_x_ticks(c, ax, f);
    size_t n = tick_values(v, 64, ax->ymin, ax->ymax, ax->ystep);
    for (size_t i = 0; i < n; i++) {
        data_to_pixel(&px, &py, ax, ax->xmin, v[i]);
        fill_rect(c, ax->left - 6, (int)floor(py), ax->left - 1, (int)floor(py) + 1, FRAME);
        format_tick(buf, sizeof(buf), v[i], ax->ystep, ax->log_xy);
        draw_label(c, ax->left - 9, floor(py) + 0.5, 1, 0.5, buf, TEXT_SCALE);
    }
}

// The title above, the x label below, the y label reading upward at the left.
static void draw_titles(Canvas *c, const Axes *ax, const Figure *f) {
    draw_label(c, c->w / 2.0, 14, 0.5, 0, f->title, TITLE_SCALE);
    int below = 30 + (ax->tick_lines - 1) * LINE_ADVANCE;
    draw_label(c, (ax->left + ax->right) / 2.0, ax->bottom + below, 0.5, 0, f->xlabel, TEXT_SCALE);
    TextPen up = {.x = 12, .y = (ax->top + ax->bottom + text_width(f->ylabel, TEXT_SCALE)) / 2,
                  .scale = TEXT_SCALE, .vertical = 1};
    draw_text(c, &up, f->ylabel);
}

static void draw_bars(Canvas *c, const Axes *ax, const Figure *f, size_t i) {
    const Series *s = &f->series[i];
    for (size_t j = 0; j < s->n; j++) {
        double x0, x1, px0, px1, py0, py1;
        bar_span(&x0, &x1, f, i, s->pts[j].x);
        data_to_pixel(&px0, &py0, ax, x0, 0);
        data_to_pixel(&px1, &py1, ax, x1, s->pts[j].y);
        int top = (int)lround(fmin(py0, py1)), bottom = (int)lround(fmax(py0, py1));
        fill_rect(c, (int)lround(px0), top, (int)lround(px1) - 1, bottom, s->color);
    }
}

// A series' line: through its points, or across the plot for SERIES_HLINE.
static void draw_series_line(Canvas *c, const Axes *ax, const Series *s) {
    if (s->width <= 0 || s->n == 0) return;
    if (s->kind == SERIES_HLINE) {
        double px, py;
        data_to_pixel(&px, &py, ax, ax->xmin, s->pts[0].y);
        draw_styled_line(c, ax->left, py, ax->right, py, s->width, s->color, s->pattern);
        return;
    }
    for (size_t j = 0; j + 1 < s->n; j++) {
        double x0, y0, x1, y1;
        data_to_pixel(&x0, &y0, ax, s->pts[j].x, s->pts[j].y);
        data_to_pixel(&x1, &y1, ax, s->pts[j + 1].x, s->pts[j + 1].y);
        draw_styled_line(c, x0, y0, x1, y1, s->width, s->color, s->pattern);
    }
}

// How many earlier series have a marker at series i's point j (within a ring's clear centre)
static int markers_under(const Figure *f, const Axes *ax, size_t i, size_t j) {
    double px, py, qx, qy, near = RING_R - RING_WIDTH / 2 - 0.5; // the ring clears the centre within
    int n = 0;
    data_to_pixel(&px, &py, ax, f->series[i].pts[j].x, f->series[i].pts[j].y);
    for (size_t a = 0; a < i; a++) {
        const Series *o = &f->series[a];
        int here = 0;
        for (size_t b = 0; o->kind == SERIES_XY && o->marker && b < o->n; b++) {
            data_to_pixel(&qx, &qy, ax, o->pts[b].x, o->pts[b].y);
            here |= hypot(px - qx, py - qy) < near;
        }
        n += here;
    }
    return n;
}

// The marker series i's point j is drawn with: its series' own, or a ring
// (open, around what is there) where a filled marker of an earlier series
// would be hidden under it, so both show: the target's validation curve
// hid under the dropout run's, a 110M shape's r(n) under the 325 MB target's.
static int marker_drawn(const Figure *f, const Axes *ax, size_t i, size_t j) {
    const Series *s = &f->series[i];
    if (s->marker == MARK_NONE || s->marker == MARK_RING) return s->marker;
    return markers_under(f, ax, i, j) ? MARK_RING : s->marker;
}

// The radius of that ring: one pen further out for each earlier marker at the spot beyond
// the first, so the rings of three models' equal r(n) nest instead of covering each other
// (the 110M shape's under the 325 MB target's: the two read at the same speed).
static double ring_radius(const Figure *f, const Axes *ax, size_t i, size_t j) {
    int n = markers_under(f, ax, i, j);
    return RING_R + (n > 1 ? n - 1 : 0) * (RING_WIDTH + 1);
}

// Whether some point is drawn as a ring around another series' (marker_drawn):
// the legend then says what a ring is.
static int any_overlap_ring(const Figure *f, const Axes *ax) {
    for (size_t i = 0; i < f->n_series; i++)
        for (size_t j = 0; f->series[i].marker != MARK_RING && j < f->series[i].n; j++)
            if (marker_drawn(f, ax, i, j) == MARK_RING) return 1;
    return 0;
}

#define RING_LABEL "ring: on a point of another line"

// All data, clipped to the plot area: bars first, then lines, then markers on
// top, so no line hides a measured point.
static void draw_data(Canvas *c, const Axes *ax, const Figure *f) {
    set_clip(c, ax->left, ax->top, ax->right, ax->bottom);
    for (size_t i = 0; i < f->n_series; i++)
        if (f->series[i].kind == SERIES_BARS) draw_bars(c, ax, f, i);
    for (size_t i = 0; i < f->n_series; i++)
        if (f->series[i].kind != SERIES_BARS) draw_series_line(c, ax, &f->series[i]);
    for (size_t i = 0; i < f->n_series; i++) {
        const Series *s = &f->series[i];
        for (size_t j = 0; s->marker && j < s->n; j++) {
            double px, py;
            data_to_pixel(&px, &py, ax, s->pts[j].x, s->pts[j].y);
            int m = marker_drawn(f, ax, i, j);
            if (m == MARK_RING) stroke_circle(c, px, py, ring_radius(f, ax, i, j), RING_WIDTH, s->color);
            else draw_marker(c, px, py, m, s->color);
        }
    }
    set_clip(c, 0, 0, c->w, c->h);
}

// How many pixels in [x0,x1) x [y0,y1) are drawn data (neither background nor grid).
static size_t count_ink(const Canvas *c, int x0, int y0, int x1, int y1) {
    size_t n = 0;
    for (int y = y0; y < y1; y++)
        for (int x = x0; x < x1; x++) {
            Color p = get_pixel(c, x, y);
            n += !same_color(p, WHITE) && !same_color(p, GRID);
        }
    return n;
}

#define LEGEND_ROW 18
#define LEGEND_SAMPLE 26

// One legend row at (x, y): a sample of how the series is drawn, then its label.
static void draw_legend_entry(Canvas *c, int x, int y, const Series *s) {
    double mid = y + LEGEND_ROW / 2.0;
    if (s->kind == SERIES_BARS) fill_rect(c, x + 8, (int)mid - 5, x + 18, (int)mid + 5, s->color);
    else if (s->width > 0)
        draw_styled_line(c, x, mid, x + LEGEND_SAMPLE, mid, s->width, s->color, s->pattern);
    draw_marker(c, x + LEGEND_SAMPLE / 2.0, mid, s->marker, s->color);
    draw_label(c, x + LEGEND_SAMPLE + 8, mid, 0, 0.5, s->label, TEXT_SCALE);
}

// Whether the w x h box at (x, y) meets box b (x0, y0, x1, y1)
static int boxes_meet(const int *b, int x, int y, int w, int h) {
    return b[0] < x + w && x < b[2] && b[1] < y + h && y < b[3];
}

// Where a w x h legend box hides the least drawn data: the first free corner
// (or top/bottom centre); failing that, the spot with the least ink among
// every height at the right, left and centre. A spot over one of the n bar
// notes (bar_note_boxes) counts as full of ink: a label hidden is worse than a line.
static void place_legend(int *bx, int *by, const Canvas *c, const Axes *ax, int w, int h,
                         const int (*notes)[4], size_t n) {
    const int m = 8, xs[3] = {ax->right - m - w, ax->left + m, (ax->left + ax->right - w) / 2};
    size_t best = (size_t)-1;
    for (int pass = 0; pass < 2 && best > 0; pass++) {
        int y_step = pass == 0 ? ax->bottom - 2 * m - h - ax->top : 5;
        for (int y = ax->top + m; y_step > 0 && y + h <= ax->bottom - m; y += y_step)
            for (int i = 0; i < 3; i++) {
                size_t ink = count_ink(c, xs[i], y, xs[i] + w, y + h);
                for (size_t k = 0; k < n; k++)
                    if (notes[k][2] && boxes_meet((int[4]){notes[k][0] - NOTE_PAD, notes[k][1] - NOTE_PAD,
                        notes[k][0] + notes[k][2] + NOTE_PAD, notes[k][1] + notes[k][3] + NOTE_PAD}, xs[i], y, w, h))
                        ink += (size_t)w * h;
                if (ink >= best) continue;
                best = ink;
                *bx = xs[i];
                *by = y;
            }
    }
}

// The legend's size: *w by *h pixels for n rows (rings: one more, RING_LABEL's);
// returns n (0: no legend).
static int legend_size(int *w, int *h, const Figure *f, int rings) {
    int n = rings, label_w = rings ? text_width(RING_LABEL, TEXT_SCALE) : 0;
    for (size_t i = 0; i < f->n_series; i++)
        if (f->series[i].label[0]) {
            n++;
            int tw = text_width(f->series[i].label, TEXT_SCALE);
            if (tw > label_w) label_w = tw;
        }
    *w = 10 + LEGEND_SAMPLE + 8 + label_w + 10;
    *h = 8 + n * LEGEND_ROW + 6;
    return n;
}

// Where the legend goes (box: x0, y0, x1, y1; all 0: no legend), off the data
// and the bar notes (box[i] of bar_note_boxes); *rings: a row for the rings
// where points were drawn as rings (marker_drawn).
static void legend_box(int *box, int *rings, const Canvas *c, const Axes *ax, const Figure *f,
                       const int (*notes)[4]) {
    int w, h, x = ax->left, y = ax->top;
    *rings = any_overlap_ring(f, ax);
    box[0] = box[1] = box[2] = box[3] = 0;
    if (legend_size(&w, &h, f, *rings) == 0) return;
    place_legend(&x, &y, c, ax, w, h, notes, f->n_notes);
    memcpy(box, (int[4]){x, y, x + w, y + h}, sizeof(int[4]));
}

static void draw_legend(Canvas *c, const Figure *f, const int *box, int rings) {
    int x = box[0], y = box[1], w = box[2] - box[0], h = box[3] - box[1];
    if (!w) return;
    fill_rect(c, x, y, x + w, y + h, WHITE);
    stroke_rect(c, x, y, x + w, y + h, FRAME);
    y += 7;
    for (size_t i = 0; i < f->n_series; i++)
        if (f->series[i].label[0]) {
            draw_legend_entry(c, x + 10, y, &f->series[i]);
            y += LEGEND_ROW;
        }
    if (rings)
        draw_legend_entry(c, x + 10, y, &(Series){.label = RING_LABEL, .color = FRAME, .marker = MARK_RING});
}

// Moves a w x h box (top-left *x, *y) into the plot area, padding included.
static void clamp_box(int *x, int *y, const Axes *ax, int w, int h) {
    int p = NOTE_PAD + 1;
    if (*x > ax->right - p - w) *x = ax->right - p - w;
    if (*x < ax->left + p) *x = ax->left + p;
    if (*y > ax->bottom - p - h) *y = ax->bottom - p - h;
    if (*y < ax->top + p) *y = ax->top + p;
}

// How far a marker's ink (its halo included) reaches from its centre.
static double marker_reach(int marker) {
    if (marker == MARK_RING) return RING_R + RING_WIDTH / 2;
    if (marker == MARK_SQUARE) return (MARK_R + 1) * sqrt(2.0); // the halo's corners
    return marker == MARK_CIRCLE ? MARK_R + 1.5 : 0;
}

// Where a w x h note (top-left *x, *y) goes beside the point at (px, py),
// `gap` pixels off: of the eight sides tried (right, left, above, below, then
// the corners) the first that covers the least ink, kept in the plot area;
// one over a box to avoid (n of them, x0, y0, x1, y1: the legend, the notes so
// far) or over a marker of f's (NULL: none) counts as full of ink.
static void place_beside(int *x, int *y, const Canvas *c, const Axes *ax, double px, double py,
                         int w, int h, double gap, const int (*avoid)[4], size_t n, const Figure *f) {
    static const int dx[8] = {1, -1, 0, 0, 1, 1, -1, -1}, dy[8] = {0, 0, -1, 1, -1, 1, -1, 1};
    size_t best = (size_t)-1;
    for (int i = 0; i < 8 && best > 0; i++) {
        int bx = (int)lround(px + dx[i] * gap - (dx[i] < 0 ? w : dx[i] == 0 ? w / 2.0 : 0));
        int by = (int)lround(py + dy[i] * gap - (dy[i] < 0 ? h : dy[i] == 0 ? h / 2.0 : 0));
        clamp_box(&bx, &by, ax, w, h);
        size_t ink =
            count_ink(c, bx - NOTE_PAD, by - NOTE_PAD, bx + w + NOTE_PAD, by + h + NOTE_PAD);
        size_t full = (size_t)(w + 2 * NOTE_PAD) * (h + 2 * NOTE_PAD);
        for (size_t k = 0; k < n; k++)
            if (boxes_meet(avoid[k], bx - NOTE_PAD, by - NOTE_PAD, w + 2 * NOTE_PAD, h + 2 * NOTE_PAD)) ink += full;
        for (size_t i = 0; f && i < f->n_series; i++)
            for (size_t j = 0; f->series[i].marker && j < f->series[i].n; j++) {
                double mx, my;
                data_to_pixel(&mx, &my, ax, f->series[i].pts[j].x, f->series[i].pts[j].y);
                ink += mx > bx - NOTE_PAD && mx < bx + w + NOTE_PAD && my > by - NOTE_PAD && my < by + h + NOTE_PAD
                       ? full : 0;
            }
        if (ink >= best) continue;
        best = ink;
        *x = bx;
        *y = by;
    }
}

// Where each note that belongs to a bar goes (box[i]: x, y of the text's
// top left, w, h; w = 0 for a note beside a marker): centred above its bar,
// kept in the plot; one that would overlap an earlier bar's note (bars
// narrower than their notes) goes above that note instead.
static void bar_note_boxes(int (*box)[4], const Axes *ax, const Figure *f) {
    for (size_t i = 0; i < f->n_notes; i++) {
        const Note *n = &f->notes[i];
        const Series *s = &f->series[n->series];
        int *b = box[i], w = block_width(n->text), h = block_height(n->text), m = 2 * NOTE_PAD + 1;
        double px, py, x0, x1;
        b[0] = b[1] = b[2] = b[3] = 0;
        if (s->kind != SERIES_BARS) continue;
        bar_span(&x0, &x1, f, n->series, s->pts[n->point].x);
        data_to_pixel(&px, &py, ax, (x0 + x1) / 2, s->pts[n->point].y);
        b[0] = (int)lround(px - w / 2.0);
        b[1] = (int)lround(py) - NOTE_GAP - NOTE_PAD - h;
        b[2] = w;
        b[3] = h;
        clamp_box(&b[0], &b[1], ax, w, h);
        for (size_t j = 0; j < i; j++) { // each move is upward: this ends
            const int *o = box[j];
            if (o[2] && b[0] < o[0] + o[2] + m && o[0] < b[0] + w + m && b[1] < o[1] + o[3] + m &&
                o[1] < b[1] + h + m) {
                b[1] = o[1] - m - h;
                j = (size_t)-1; // and look again from the first
            }
        }
    }
}

// A note on a white ground, in a darker shade of its series' colour: at its
// place above its bar (bar_note_boxes), or beside its marker off the n boxes
// in avoid (the legend, the notes drawn so far); avoid[n]: where it went.
static void draw_note(Canvas *c, const Axes *ax, const Figure *f, const Note *n, const int *bar_box,
                      int (*avoid)[4], size_t n_avoid) {
    const Series *s = &f->series[n->series];
    Color ink = shade(s->color, 0.3);
    int w = block_width(n->text), h = block_height(n->text), x = ax->left, y = ax->top;
    double px, py;
    if (s->kind == SERIES_BARS) {
        x = bar_box[0];
        y = bar_box[1];
    } else {
        data_to_pixel(&px, &py, ax, s->pts[n->point].x, s->pts[n->point].y);
        place_beside(&x, &y, c, ax, px, py, w, h, marker_reach(s->marker) + NOTE_GAP, (const int (*)[4])avoid,
                     n_avoid, f);
    }
    fill_rect(c, x - NOTE_PAD, y - NOTE_PAD, x + w + NOTE_PAD, y + h + NOTE_PAD, WHITE);
    draw_block(c, x + w / 2.0, y, n->text, &ink);
    memcpy(avoid[n_avoid], (int[4]){x - NOTE_PAD, y - NOTE_PAD, x + w + NOTE_PAD, y + h + NOTE_PAD}, sizeof(int[4]));
}

// Draws f on a new FIG_W x FIG_H canvas; *ax tells where the data landed.
static int render_figure(Canvas *c, Axes *ax, const Figure *f, Error *e) {
    Range r;
    if (data_range(&r, f) == 0) return fail(e, "figure \"%s\": no data to plot", f->title);
    if (build_canvas(c, FIG_W, FIG_H, e)) return -1;
    layout_axes(ax, f, c->w, c->h);
    draw_grid(c, ax, f);
    draw_data(c, ax, f);
    int box[MAX_NOTES][4], rings;
    bar_note_boxes(box, ax, f);
    legend_box(ax->placed[0], &rings, c, ax, f, (const int (*)[4])box); // where the data and bar notes are not
    for (size_t i = 0; i < f->n_notes; i++) // after all data, each off the legend and the notes before it
        draw_note(c, ax, f, &f->notes[i], box[i], ax->placed, i + 1);
    draw_ticks(c, ax, f);
    draw_titles(c, ax, f);
    draw_legend(c, f, ax->placed[0], rings);
    return 0;
}

// ----------------------------------------------------------------------------
// CSV reading: a header row names the columns; fields are found by name

typedef struct {
    char *path;
    char *text;          // the whole file, cut in place into NUL-terminated fields
    const char **names;  // n_cols column names (pointers into text)
    const char **cells;  // n_rows * n_cols fields ("" where a row is short)
    double *nums;        // the same fields as numbers; NaN where empty or not a number
    size_t *lines;       // each row's line number in the file, for messages
    size_t n_cols, n_rows;
} Table;

// Everything left in fp, NUL-terminated; NULL if out of memory.
static char *read_stream(FILE *fp) {
    size_t len = 0, cap = 1 << 16;
    char *buf = malloc(cap);
    while (buf && (len += fread(buf + len, 1, cap - 1 - len, fp)) == cap - 1) {
        char *bigger = realloc(buf, 2 * cap);
        if (!bigger) free(buf);
        buf = bigger;
        cap *= 2;
    }
    if (buf) buf[len] = '\0';
    return buf;
}

// The whole file as one NUL-terminated string; NULL (and an error) if unreadable.
static char *load_text(const char *path, Error *e) {
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        fail(e, "%s: cannot open (missing or unreadable)", path);
        return NULL;
    }
    char *buf = read_stream(fp);
    if (buf && ferror(fp)) {
        free(buf);
        buf = NULL;
    }
    fclose(fp);
    if (!buf) fail(e, "%s: cannot read (or out of memory)", path);
    return buf;
}

// Where parsing is in the text, and on which line (the text is cut up as we
// go, so lines are counted while reading, not afterwards).
typedef struct {
    char *p;
    size_t line;
} Cursor;

// Cuts the field at the cursor out in place: strips "quotes" (a doubled "" is
// one "), trims blanks around it, NUL-terminates it. The cursor moves past the
// comma or line end; *eol says the field ended its line (or the text).
static char *next_field(Cursor *c, int *eol) {
    char *s = c->p, *w, *start;
    while (*s == ' ' || *s == '\t') s++;
    start = w = s;
    int quoted = *s == '"';
    if (quoted) s++;
    for (; *s; s++) {
        if (quoted && *s == '"' && s[1] == '"') *w++ = *s++;
        else if (quoted && *s == '"') quoted = 0;
        else if (!quoted && (*s == ',' || *s == '\n' || *s == '\r')) break;
        else *w++ = *s;
        c->line += *s == '\n'; // a line break inside quotes
    }
    *eol = *s != ',';
    if (*s == '\r' && s[1] == '\n') s++;
    c->line += *s == '\n' || *s == '\r';
    c->p = *s ? s + 1 : s;
    while (w > start && (w[-1] == ' ' || w[-1] == '\t')) w--;
    *w = '\0'; // may overwrite the terminator: the cursor has moved past it
    return start;
}

// Whether a field is entirely a number (strtod's syntax, so "nan" and "inf" count).
static int is_number(const char *s) {
    char *end;
    if (!*s) return 0;
    strtod(s, &end);
    return *end == '\0';
}

// A field as a number: NaN when empty or not a number.
static double parse_number(const char *s) { return is_number(s) ? strtod(s, NULL) : NAN; }

// Skips the line at the cursor if it holds only blanks; returns whether it did.
static int skip_blank_line(Cursor *c) {
    char *s = c->p;
    while (*s == ' ' || *s == '\t') s++;
    if (*s != '\r' && *s != '\n' && *s != '\0') return 0;
    if (*s == '\r' && s[1] == '\n') s++;
    if (*s) {
        s++;
        c->line++;
    }
    c->p = s;
    return 1;
}

// Splits the header row into t->names; the cursor ends on the first data line.
static int read_header(Table *t, Cursor *p, Error *e) {
    size_t cap = 1;
    for (const char *s = p->p; *s && *s != '\n'; s++) cap += *s == ',';
    t->names = malloc(cap * sizeof(char *));
    if (!t->names) return fail(e, "%s: out of memory", t->path);
    int eol = 0;
    while (!eol && t->n_cols < cap) t->names[t->n_cols++] = next_field(p, &eol);
    if (t->n_cols == 1 && !t->names[0][0]) return fail(e, "%s: empty file, no header row", t->path);
    return 0;
}

// Room for every data row: at most one per line left in the file (a lone
// '\r' also ends a line, so it counts too).
static int alloc_rows(Table *t, const char *p, Error *e) {
    size_t lines = 1;
    for (; *p; p++) lines += *p == '\n' || *p == '\r';
    size_t cells = lines * t->n_cols;
    t->cells = malloc(cells * sizeof(char *));
    t->nums = malloc(cells * sizeof(double));
    t->lines = malloc(lines * sizeof(size_t));
    if (!t->cells || !t->nums || !t->lines) return fail(e, "%s: out of memory", t->path);
    return 0;
}

// Reads one data row at the cursor; fields past the header's width are ignored.
static void read_row(Table *t, Cursor *p) {
    const char **row = t->cells + t->n_rows * t->n_cols;
    double *nums = t->nums + t->n_rows * t->n_cols;
    size_t i = 0;
    t->lines[t->n_rows] = p->line;
    for (int eol = 0; !eol; i++) {
        const char *field = next_field(p, &eol);
        if (i >= t->n_cols) continue;
        row[i] = field;
        nums[i] = parse_number(field);
    }
    for (; i < t->n_cols; i++) {
        row[i] = "";
        nums[i] = NAN;
    }
    t->n_rows++;
}

static void free_table(Table *t) {
    free(t->path);
    free(t->text);
    free(t->names);
    free(t->cells);
    free(t->nums);
    free(t->lines);
    memset(t, 0, sizeof(*t));
}

// Reads the CSV at path into *t (which the caller frees, after a failure too).
static int read_table(Table *t, const char *path, Error *e) {
    memset(t, 0, sizeof(*t));
    t->path = malloc(strlen(path) + 1);
    if (!t->path) return fail(e, "%s: out of memory", path);
    strcpy(t->path, path);
    t->text = load_text(path, e);
    if (!t->text) return -1;
    Cursor p = {.p = t->text, .line = 1};
    if (read_header(t, &p, e) || alloc_rows(t, p.p, e)) return -1;
    while (*p.p)
        if (!skip_blank_line(&p)) read_row(t, &p);
    return 0;
}

// The column named `name`, or -1.
static int find_column(const Table *t, const char *name) {
    for (size_t i = 0; i < t->n_cols; i++)
        if (!strcmp(t->names[i], name)) return (int)i;
    return -1;
}

// The column named `name` in *col, or an error naming the file and column.
static int require_column(int *col, const Table *t, const char *name, Error *e) {
    *col = find_column(t, name);
    if (*col < 0) return fail(e, "%s: no column \"%s\" in the header row", t->path, name);
    return 0;
}

// Finds each named column and checks that its fields are numbers or empty.
static int require_numbers(int *cols, const Table *t, const char *const *names, size_t n,
                           Error *e) {
    for (size_t i = 0; i < n; i++) {
        if (require_column(&cols[i], t, names[i], e)) return -1;
        for (size_t r = 0; r < t->n_rows; r++) {
            const char *field = t->cells[r * t->n_cols + (size_t)cols[i]];
            if (field[0] && !is_number(field))
                return fail(e, "%s:%zu: column \"%s\" holds \"%s\", not a number", t->path,
                            t->lines[r], names[i], field);
        }
    }
    return 0;
}

static double num(const Table *t, size_t row, int col) {
    return t->nums[row * t->n_cols + (size_t)col];
}

static const char *cell(const Table *t, size_t row, int col) {
    return t->cells[row * t->n_cols + (size_t)col];
}

// ----------------------------------------------------------------------------
// Grouping rows: one series per temperature, per K or per model

// Whether two fields name the same group: equal as numbers ("1" and "1.0")
// or, when not numbers, equal as text.
static int same_key(const char *a, const char *b) {
    double x = parse_number(a), y = parse_number(b);
    if (!isnan(x) && !isnan(y)) return x == y;
    return !strcmp(a, b);
}

#define MAX_GROUPS N_PALETTE

// The distinct non-empty values of column col, in order of first appearance
// (keys[i] is the first such field). More groups than colours is an error.
static int group_keys(const char **keys, size_t *n, const Table *t, int col, Error *e) {
    *n = 0;
    for (size_t r = 0; r < t->n_rows; r++) {
        const char *k = cell(t, r, col);
        size_t i = 0;
        while (i < *n && !same_key(keys[i], k)) i++;
        if (i < *n || !k[0]) continue;
        if (*n == MAX_GROUPS)
            return fail(e, "%s: more than %d distinct values of \"%s\"; the figure can show %d",
                        t->path, MAX_GROUPS, t->names[col], MAX_GROUPS);
        keys[(*n)++] = k;
    }
    if (*n == 0) return fail(e, "%s: column \"%s\" is empty in every row", t->path, t->names[col]);
    return 0;
}

// One group's rows: those whose key_col field is the same key as `key`.
typedef struct {
    const Table *t;
    int key_col;
    const char *key;
} Group;

static int in_group(const Group *g, size_t row) {
    return same_key(cell(g->t, row, g->key_col), g->key);
}

// Whether a sweep row is an auto-K run (column "auto" is 1; its k is the K
// auto-K ran most): such rows are drawn apart from the fixed-K ones.
static int is_auto_row(const Table *t, size_t row) {
    int col = find_column(t, "auto");
    return col >= 0 && num(t, row, col) == 1;
}

// Whether row is one of the group's fixed-K rows.
static int in_fixed_k(const Group *g, size_t row) {
    return in_group(g, row) && !is_auto_row(g->t, row);
}

// The mean of column col over the group's fixed-K rows where it is not empty
// (NaN if none).
static double group_mean(const Group *g, int col) {
    double sum = 0;
    size_t n = 0;
    for (size_t r = 0; r < g->t->n_rows; r++) {
        if (!in_fixed_k(g, r) || isnan(num(g->t, r, col))) continue;
        sum += num(g->t, r, col);
        n++;
    }
    return n ? sum / (double)n : NAN;
}

// Sums of columns cols[0..n) over the group's fixed-K rows with k == k_want,
// skipping empty fields; count[i] says how many fields went into sum[i].
static void group_sums(double *sum, size_t *count, const Group *g, int k_col, double k_want,
                       const int *cols, size_t n) {
    for (size_t i = 0; i < n; i++) {
        sum[i] = 0;
        count[i] = 0;
    }
    for (size_t r = 0; r < g->t->n_rows; r++) {
        if (!in_fixed_k(g, r) || num(g->t, r, k_col) != k_want) continue;
        for (size_t i = 0; i < n; i++) {
            if (isnan(num(g->t, r, cols[i]))) continue;
            sum[i] += num(g->t, r, cols[i]);
            count[i]++;
        }
    }
}

// ----------------------------------------------------------------------------
// Figures: each reads its CSVs' columns by name and fills a Figure

// The K at which the sweep records acceptance per position and the histogram
// of accepted proposals per round: after K acceptances the drafter proposes
// position K + 1 too (specdec's round), so a K = 8 row has positions
// pos1..pos9 and rounds that accepted 0..9 proposals, hist0..hist9
// (DETAIL_LAST = K + 1 either way).
#define K_DETAIL 8
#define DETAIL_LAST (K_DETAIL + 1)
#define MAX_INPUTS 4 // the most CSVs one figure reads

// model.h's predicted_speedup (the formula specdec prints) at a K read from a
// CSV; NaN (a point left out) unless K is a whole number from 1 to 64.
static double theory_speedup(double a, double k, double c, double r) {
    if (!(k >= 1 && k <= 64) || k != floor(k)) return NAN;
    return predicted_speedup(a, (int)k, c, r);
}

// sweep_k.csv's columns, in the order figure_speedup_vs_k asks for them.
enum { COL_TEMP, COL_K, COL_ALPHA, COL_C, COL_R, COL_SPEEDUP, N_SPEEDUP_COLS };

// One temperature of sweep_k.csv: its rows, its index g (colour and marker),
// its mean a and c, and the series its fixed-K rows go into.
typedef struct {
    Group rows;
    const int *col; // COL_TEMP .. COL_SPEEDUP
    size_t g;
    double a, c;
    Series *measured, *theory;
} SpeedupGroup;

// An auto-K run of the sweep: its measured speedup at the K it ran most, in
// the next colour of the palette, so it compares with the fixed-K points.
static int auto_point(Figure *f, const SpeedupGroup *sg, size_t row, Error *e) {
    const Table *t = sg->rows.t;
    char label[96];
    snprintf(label, sizeof(label), "T = %s auto-K (-k 0), at the K it ran most", sg->rows.key);
    Series *s = add_series(f, label, PALETTE[(sg->g + 2) % N_PALETTE], SERIES_XY, e);
    if (!s) return -1;
    s->marker = sg->g % 2 ? MARK_SQUARE : MARK_CIRCLE;
    return add_point(s, num(t, row, sg->col[COL_K]), num(t, row, sg->col[COL_SPEEDUP]), e);
}

// A fixed-K row: its measured point, and the theory at its K with its own r.
static int speedup_row(const SpeedupGroup *sg, size_t row, Error *e) {
    const Table *t = sg->rows.t;
    double k = num(t, row, sg->col[COL_K]), r = num(t, row, sg->col[COL_R]);
    if (add_point(sg->measured, k, num(t, row, sg->col[COL_SPEEDUP]), e)) return -1;
    return add_point(sg->theory, k, theory_speedup(sg->a, k, sg->c, r), e);
}

// The temperature's two series: measured points (circles or squares,
// alternating between temperatures) and the theory as a 2-pixel line.
static int speedup_series(Figure *f, SpeedupGroup *sg, Error *e) {
    char label[96];
    snprintf(label, sizeof(label), "T = %s measured", sg->rows.key);
    sg->measured = add_series(f, label, PALETTE[sg->g], SERIES_XY, e);
    snprintf(label, sizeof(label), "T = %s theory (a %.2f, c %.3f)", sg->rows.key, sg->a, sg->c);
    sg->theory = sg->measured ? add_series(f, label, PALETTE[sg->g], SERIES_XY, e) : NULL;
    if (!sg->theory) return -1;
    sg->measured->marker = sg->g % 2 ? MARK_SQUARE : MARK_CIRCLE;
    sg->theory->width = 2;
    return 0;
}

// Measured points and the theory curve for one temperature of sweep_k.csv:
// the curve uses the temperature's mean a and c, and each row's own r (the
// verify cost grows with K). Auto-K rows get their own marker.
static int speedup_group(Figure *f, const Table *t, const int *col, const char *key, size_t g,
                         Error *e) {
    SpeedupGroup sg = {.rows = {.t = t, .key_col = col[COL_TEMP], .key = key}, .col = col, .g = g};
    sg.a = group_mean(&sg.rows, col[COL_ALPHA]);
    sg.c = group_mean(&sg.rows, col[COL_C]);
    if (speedup_series(f, &sg, e)) return -1;
    for (size_t r = 0; r < t->n_rows; r++) {
        if (!in_group(&sg.rows, r)) continue;
        if (is_auto_row(t, r) ? auto_point(f, &sg, r, e) : speedup_row(&sg, r, e)) return -1;
    }
    sort_by_x(sg.measured);
    sort_by_x(sg.theory);
    return 0;
}

static int figure_speedup_vs_k(Figure *f, const Table *tables, size_t n_tables, Error *e) {
    static const char *const names[N_SPEEDUP_COLS] = {"temperature", "k", "alpha", "c", "r",
                                                      "speedup"};
    const Table *t = &tables[0];
    const char *keys[MAX_GROUPS];
    size_t n;
    int col[N_SPEEDUP_COLS];
    (void)n_tables;
    if (require_numbers(col, t, names, N_SPEEDUP_COLS, e) || group_keys(keys, &n, t, col[0], e))
        return -1;
    build_figure(f, "Speedup vs draft length K", "K (tokens drafted per round)",
                 "speedup over the target alone");
    f->y_zero = 1; // honest bar heights, and room below the points for the legend
    for (size_t g = 0; g < n; g++)
        if (speedup_group(f, t, col, keys[g], g, e)) return -1;
    return add_hline(f, 1, "speedup = 1 (break-even)", e);
}

// A measured curve for group g: its colour, a 2-pixel line, and markers that
// alternate circle / square between groups (telling them apart without colour).
static Series *add_curve(Figure *f, const char *label, size_t g, Error *e) {
    Series *s = add_series(f, label, PALETTE[g], SERIES_XY, e);
    if (!s) return NULL;
    s->width = 2;
    s->marker = g % 2 ? MARK_SQUARE : MARK_CIRCLE;
    return s;
}

// Adds one temperature's series from the sums (and counts of non-empty fields)
// of its K = 8 rows' detail columns.
typedef int (*DetailGroup)(Figure *f, const double *sum, const size_t *count, const Group *rows,
                           size_t g, Error *e);

// The columns a detail figure reads: temperature, k, then
// prefix<from>..prefix<DETAIL_LAST> (spelled out in store); returns how many.
static size_t detail_columns(const char **names, char (*store)[16], const char *prefix, int from) {
    size_t n = 0;
    names[n++] = "temperature";
    names[n++] = "k";
    for (int i = from; i <= DETAIL_LAST; i++) {
        char *name = store[i - from];
        snprintf(name, sizeof(store[0]), "%s%d", prefix, i);
        names[n++] = name;
    }
    return n;
}

// The figures drawn from sweep_k.csv's K = 8 rows: per temperature, columns
// prefix<from>..prefix<DETAIL_LAST> summed over those rows and handed to
// add_group (sum[0] is prefix<from>'s).
static int detail_figure(Figure *f, const Table *t, const char *prefix, int from,
                         DetailGroup add_group, Error *e) {
    char store[DETAIL_LAST + 1][16];
    const char *names[3 + DETAIL_LAST], *keys[MAX_GROUPS];
    int col[3 + DETAIL_LAST];
    size_t n, n_cols = detail_columns(names, store, prefix, from), count[DETAIL_LAST + 1];
    double sum[DETAIL_LAST + 1];
    if (require_numbers(col, t, names, n_cols, e) || group_keys(keys, &n, t, col[0], e)) return -1;
    for (size_t g = 0; g < n; g++) {
        Group rows = {.t = t, .key_col = col[0], .key = keys[g]};
        group_sums(sum, count, &rows, col[1], K_DETAIL, col + 2, n_cols - 2);
        if (add_group(f, sum, count, &rows, g, e)) return -1;
    }
    if (f->n_series == 0)
        return fail(e, "%s: no rows with k = %d and %s%d..%s%d filled in", t->path, K_DETAIL,
                    prefix, from, prefix, DETAIL_LAST);
    return 0;
}

// One temperature's mean acceptance at each position 1..K + 1 (none: no K = 8
// rows); sum[i] is position i + 1's.
static int acceptance_group(Figure *f, const double *sum, const size_t *count, const Group *group,
                            size_t g, Error *e) {
    size_t rows = 0;
    for (int i = 0; i < DETAIL_LAST; i++) rows += count[i];
    if (rows == 0) return 0;
    char label[96];
    snprintf(label, sizeof(label), "T = %s", group->key);
    Series *s = add_curve(f, label, g, e);
    if (!s) return -1;
    for (int i = 0; i < DETAIL_LAST; i++)
        if (count[i] && add_point(s, i + 1, sum[i] / (double)count[i], e)) return -1;
    return 0;
}

static int figure_acceptance_by_position(Figure *f, const Table *tables, size_t n_tables,
                                         Error *e) {
    (void)n_tables;
    build_figure(f, "Acceptance by draft position (K = 8)",
                 "draft position i (9: proposed after all 8 were accepted)",
                 "P(draft i accepted | drafts before it accepted)");
    f->y_unit = 1;
    return detail_figure(f, &tables[0], "pos", 1, acceptance_group, e);
}

// Tokens a K = 8 round commits when it accepted j proposals: j + 1 (the
// target's draw at the first rejection, or at position K + 1 when nothing
// was proposed there), and K + 1 when it accepted all K + 1.
static double tokens_committed(int j) { return j <= K_DETAIL ? j + 1 : K_DETAIL + 1; }

// One temperature's histogram, every bin 0..K + 1 as a fraction of its rounds,
// labelled with the mean tokens per round: the rows' own (column tokens_per_round,
// weighted by their rounds), else what the bins commit. A row's own counts a
// generation's last round, cut by -n or the end of the text, as the tokens it
// kept; its bin counts it as j + 1 (4.81 against 4.85 in docs/sweep_k.csv).
static int histogram_group(Figure *f, const double *sum, const size_t *count, const Group *group,
                           size_t g, Error *e) {
    const Table *t = group->t;
    int k = find_column(t, "k"), tpr = find_column(t, "tokens_per_round");
    double total = 0, tokens = 0, own = 0, own_rounds = 0;
    (void)count;
    for (int j = 0; j <= DETAIL_LAST; j++) {
        total += sum[j];
        tokens += tokens_committed(j) * sum[j];
    }
    if (total <= 0) return 0;
    for (size_t r = 0; tpr >= 0 && r < t->n_rows; r++) { // the rows group_sums summed
        double rounds = 0;
        if (!in_fixed_k(group, r) || num(t, r, k) != K_DETAIL || isnan(num(t, r, tpr))) continue;
        for (int j = 0; j <= DETAIL_LAST; j++) {
            char name[16];
            snprintf(name, sizeof(name), "hist%d", j);
            double v = num(t, r, find_column(t, name));
            rounds += isnan(v) ? 0 : v;
        }
        own += num(t, r, tpr) * rounds;
        own_rounds += rounds;
    }
    char label[96];
    snprintf(label, sizeof(label), "T = %s (%.0f rounds, mean %.2f tokens per round)", group->key, total,
             own_rounds > 0 ? own / own_rounds : tokens / total);
    Series *s = add_series(f, label, PALETTE[g], SERIES_BARS, e);
    if (!s) return -1;
    for (int j = 0; j <= DETAIL_LAST; j++)
        if (add_point(s, j, sum[j] / total, e)) return -1;
    return 0;
}

static int figure_tokens_per_round(Figure *f, const Table *tables, size_t n_tables, Error *e) {
    (void)n_tables;
    build_figure(f, "Proposals accepted per round (K = 8)",
                 "proposals accepted in one round (j commits j + 1 tokens; 9 commits 9)",
                 "fraction of rounds");
    return detail_figure(f, &tables[0], "hist", 0, histogram_group, e);
}

// One curve per group of rows sharing key_col's value: points (x_col, y_col)
// in x order, labelled prefix + the key.
static int curves_by_group(Figure *f, const Table *t, const int col[3], const char *prefix,
                           Error *e) {
    const char *keys[MAX_GROUPS];
    size_t n;
    if (group_keys(keys, &n, t, col[0], e)) return -1;
    for (size_t g = 0; g < n; g++) {
        Group rows = {.t = t, .key_col = col[0], .key = keys[g]};
        char label[96];
        snprintf(label, sizeof(label), "%s%s", prefix, keys[g]);
        Series *s = add_curve(f, label, g, e);
        if (!s) return -1;
        for (size_t r = 0; r < t->n_rows; r++)
            if (in_group(&rows, r) && add_point(s, num(t, r, col[1]), num(t, r, col[2]), e))
                return -1;
        sort_by_x(s);
    }
    return 0;
}

static int figure_alpha_vs_temperature(Figure *f, const Table *tables, size_t n_tables, Error *e) {
    static const char *const names[] = {"k", "temperature", "alpha"};
    int col[3];
    (void)n_tables;
    if (require_numbers(col, &tables[0], names, 3, e)) return -1;
    build_figure(f, "a (accepted per examined proposal) vs temperature", "sampling temperature",
                 "a = accepted / examined proposals");
    f->y_unit = 1;
    return curves_by_group(f, &tables[0], col, "K = ", e);
}

// A model's name from its log's path: docs/train_draft.csv -> "draft".
static void model_name(char *out, size_t cap, const char *path) {
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (!strncmp(base, "train_", 6)) base += 6;
    size_t n = strcspn(base, ".");
    snprintf(out, cap, "%.*s", (int)(n < cap ? n : cap - 1), base);
    for (char *p = out; *p; p++)
        if (*p == '_') *p = ' ';
}

// One model's curves: train loss as a thin lighter line, validation loss as a
// line with markers, both against millions of tokens seen.
static int loss_curves(Series *train, Series *val, const Table *t, const int *col, Error *e) {
    for (size_t r = 0; r < t->n_rows; r++) {
        double mtok = num(t, r, col[0]) / 1e6;
        if (add_point(train, mtok, num(t, r, col[1]), e) ||
            add_point(val, mtok, num(t, r, col[2]), e))
            return -1;
    }
    sort_by_x(train);
    sort_by_x(val);
    if (train->n + val->n == 0) return fail(e, "%s: no rows with a loss", t->path);
    return 0;
}

// Model i's train (thin, lighter) or validation (with markers) series.
static Series *loss_series(Figure *f, const Table *t, size_t i, int validation, Error *e) {
    char name[64], label[96];
    model_name(name, sizeof(name), t->path);
    snprintf(label, sizeof(label), "%s: %s", name, validation ? "validation" : "train");
    Color col = validation ? PALETTE[i] : tint(PALETTE[i], 0.45);
    Series *s = add_series(f, label, col, SERIES_XY, e);
    if (!s) return NULL;
    s->width = validation ? 2 : 1.2;
    s->marker = validation ? MARK_CIRCLE : MARK_NONE;
    return s;
}

static int figure_training_loss(Figure *f, const Table *tables, size_t n_tables, Error *e) {
    static const char *const names[] = {"tokens", "train_loss", "val_loss"};
    Series *train[MAX_INPUTS], *val[MAX_INPUTS];
    int col[MAX_INPUTS][3];
    for (size_t i = 0; i < n_tables; i++)
        if (require_numbers(col[i], &tables[i], names, 3, e)) return -1;
    build_figure(f, "Training loss", "tokens seen (millions)",
                 "cross-entropy loss (nats per token)");
    // every train line first, so they go under the validation curves
    for (size_t i = 0; i < n_tables; i++)
        if (!(train[i] = loss_series(f, &tables[i], i, 0, e))) return -1;
    for (size_t i = 0; i < n_tables; i++)
        if (!(val[i] = loss_series(f, &tables[i], i, 1, e))) return -1;
    for (size_t i = 0; i < n_tables; i++)
        if (loss_curves(train[i], val[i], &tables[i], col[i], e)) return -1;
    return 0;
}

// Stage 2 with and without residual dropout (train_target.csv,
// train_target_dropout.csv): their validation losses alone, on an axis of
// their own. In training_loss's, which spans the base's 7.7 nats, the two
// lie 0.004-0.03 apart (1-3 pixels) and the later hid the earlier.
static int figure_finetune_loss(Figure *f, const Table *tables, size_t n_tables, Error *e) {
    static const char *const names[] = {"tokens", "val_loss"};
    int col[MAX_INPUTS][2];
    for (size_t i = 0; i < n_tables; i++)
        if (require_numbers(col[i], &tables[i], names, 2, e)) return -1;
    build_figure(f, "Stage 2 validation loss, with and without dropout", "tokens seen in stage 2 (millions)",
                 "validation loss (nats per token)");
    for (size_t i = 0; i < n_tables; i++) {
        const Table *t = &tables[i];
        char name[64], label[96];
        model_name(name, sizeof(name), t->path);
        snprintf(label, sizeof(label), "%s: validation", name);
        Series *s = add_curve(f, label, i, e);
        if (!s) return -1;
        for (size_t r = 0; r < t->n_rows; r++)
            if (add_point(s, num(t, r, col[i][0]) / 1e6, num(t, r, col[i][1]), e)) return -1;
        sort_by_x(s);
        if (s->n == 0) return fail(e, "%s: no rows with a validation loss", t->path);
    }
    return 0;
}

// The guide r = n: what n separate one-row passes would cost.
static int add_separate_passes(Figure *f, double n_max, Error *e) {
    Series *s = add_series(f, "r = n (n separate passes)", GUIDE, SERIES_XY, e);
    if (!s) return -1;
    s->width = 1.8;
    s->pattern = DOTTED;
    s->scales = 0;
    return add_point(s, 1, 1, e) ? -1 : add_point(s, n_max, n_max, e);
}

// Whether row r failed the bench's check of what its own numbers allow (a
// column "check" that is neither empty nor "ok": bench.c's check_row).
static int row_flagged(const Table *t, size_t r) {
    int col = find_column(t, "check");
    return col >= 0 && cell(t, r, col)[0] && strcmp(cell(t, r, col), "ok");
}

#define FLAG_MARK "!" // a note's last line on a flagged row

// verify_cost.csv: each model's r(n), one curve per model; a row the bench flagged
// (r measured below 1, published as 1: check r_below_1) marked FLAG_MARK at its point.
static int figure_verify_cost(Figure *f, const Table *tables, size_t n_tables, Error *e) {
    static const char *const names[] = {"model", "n", "r"};
    const Table *t = &tables[0];
    int col[3];
    double n_max = 1;
    (void)n_tables;
    if (require_column(&col[0], t, names[0], e) || require_numbers(col + 1, t, names + 1, 2, e))
        return -1;
    build_figure(f, "Cost of verifying n rows in one forward pass", "n (rows in one forward pass)",
                 "r(n) = t(n rows) / t(1 row)");
    f->y_zero = 1;
    if (curves_by_group(f, t, col, "", e)) return -1;
    size_t curves = f->n_series, flagged = 0;
    for (size_t i = 0; i < curves; i++)
        for (size_t j = 0; j < f->series[i].n; j++) n_max = fmax(n_max, f->series[i].pts[j].x);
    for (size_t r = 0; r < t->n_rows; r++)
        for (size_t i = 0; row_flagged(t, r) && i < curves; i++)
            for (size_t j = 0; !strcmp(f->series[i].label, cell(t, r, col[0])) && j < f->series[i].n; j++)
                if (f->series[i].pts[j].x == num(t, r, col[1]) && ++flagged && add_note(f, i, j, FLAG_MARK, e))
                    return -1;
    if (flagged && !add_series(f, FLAG_MARK ": measured below 1, drawn at 1", INK, SERIES_XY, e))
        return -1; // a legend line, no data
    if (add_hline(f, 1, "r = 1 (as cheap as one row)", e)) return -1;
    return add_separate_passes(f, n_max, e);
}

// The speedup axis's label, naming the thread count when every row has the
// same one (column "threads", where there is one).
static void speedup_label(char *out, size_t cap, const Table *t) {
    int col = find_column(t, "threads");
    double n = col >= 0 && t->n_rows ? num(t, 0, col) : NAN;
    for (size_t r = 1; col >= 0 && r < t->n_rows; r++)
        if (num(t, r, col) != n) n = NAN;
    if (n >= 1 && n <= 4096 && n == floor(n))
        snprintf(out, cap, "speedup over the target alone (%.0f thread%s)", n, n > 1 ? "s" : "");
    else snprintf(out, cap, "speedup over the target alone");
}

// lenience.csv's columns, in the order figure_lenience asks for them.
enum { LEN_L, LEN_TV, LEN_SPEEDUP, N_LENIENCE_COLS };

// The row numbers in decreasing order of column col (an insertion sort: the
// files are a few rows), NULL if out of memory; the caller frees them.
static size_t *rows_by_decreasing(const Table *t, int col, Error *e) {
    size_t *order = malloc((t->n_rows ? t->n_rows : 1) * sizeof(size_t));
    if (!order) {
        fail(e, "%s: out of memory", t->path);
        return NULL;
    }
    for (size_t r = 0; r < t->n_rows; r++) {
        size_t j = r;
        for (; j > 0 && num(t, order[j - 1], col) < num(t, r, col); j--) order[j] = order[j - 1];
        order[j] = r;
    }
    return order;
}

// The closed-form distances as one curve in order of l, from l = 1 (exact)
// down, each point labelled with its l; where the file has column
// tv_measured (measured < 0: it has not), those distances as rings at the
// same speedups.
static int lenience_points(Figure *f, const Table *t, const int *col, int measured,
                           const size_t *order, Error *e) {
    Series *curve = add_curve(f, "closed form, mean over the prompts", 0, e), *rings = NULL;
    if (curve && measured >= 0)
        rings = add_series(f, "measured over 4000 seeds per prompt", PALETTE[1], SERIES_XY, e);
    if (!curve || (measured >= 0 && !rings)) return -1;
    if (rings) rings->marker = MARK_RING;
    for (size_t i = 0; i < t->n_rows; i++) {
        size_t r = order[i];
        double l = num(t, r, col[LEN_L]), y = num(t, r, col[LEN_SPEEDUP]);
        char text[64];
        if (isnan(l)) continue;
        snprintf(text, sizeof(text), "l=%s%s", cell(t, r, col[LEN_L]), l >= 1 ? " (exact)" : "");
        if (add_noted_point(f, curve, num(t, r, col[LEN_TV]), y, text, e)) return -1;
        if (rings && add_point(rings, num(t, r, measured), y, e)) return -1;
    }
    if (rings && rings->n == 0) f->n_series--; // an empty column: no legend entry
    if (curve->n == 0)
        return fail(e, "%s: no rows with lenience, tv_first_token and speedup filled in", t->path);
    return 0;
}

static int figure_lenience(Figure *f, const Table *tables, size_t n_tables, Error *e) {
    static const char *const names[N_LENIENCE_COLS] = {"lenience", "tv_first_token", "speedup"},
                             *const measured_name[1] = {"tv_measured"};
    const Table *t = &tables[0];
    int col[N_LENIENCE_COLS], measured = find_column(t, "tv_measured");
    char ylabel[96];
    (void)n_tables;
    if (require_numbers(col, t, names, N_LENIENCE_COLS, e) ||
        (measured >= 0 && require_numbers(&measured, t, measured_name, 1, e)))
        return -1;
    speedup_label(ylabel, sizeof(ylabel), t);
    build_figure(f, "Lenience (LOSSY below 1): speedup vs distance from p",
                 "total variation of the first token from the target's p", ylabel);
    size_t *order = rows_by_decreasing(t, col[LEN_L], e);
    int rc = order ? lenience_points(f, t, col, measured, order, e) : -1;
    free(order);
    return rc ? rc : add_hline(f, 1, "speedup = 1 (break-even)", e);
}

// drafters.csv's columns, in the order figure_drafters asks for them: the
// drafter and K are text ("draft model", "lookup"; "auto", "4"), the rest numbers.
enum { DR_DRAFTER, DR_K, DR_TEMP, DR_SPEEDUP, DR_A, DR_TOKENS, DR_C, N_DRAFTER_COLS };

// Whether a k field means auto-K: any spelling that starts "auto" ("auto", "auto0").
static int is_auto_k(const char *k) { return !strncmp(k, "auto", 4); }

// Whether rows a and b ran the same drafter with the same K.
static int same_config(const Table *t, const int *col, size_t a, size_t b) {
    const char *ka = cell(t, a, col[DR_K]), *kb = cell(t, b, col[DR_K]);
    return !strcmp(cell(t, a, col[DR_DRAFTER]), cell(t, b, col[DR_DRAFTER])) &&
           (is_auto_k(ka) ? is_auto_k(kb) : same_key(ka, kb));
}

// Row r's configuration on the x axis: the drafter, and below it the K.
static void config_name(char *out, size_t cap, const Table *t, const int *col, size_t r) {
    const char *drafter = cell(t, r, col[DR_DRAFTER]), *k = cell(t, r, col[DR_K]);
    if (is_auto_k(k)) snprintf(out, cap, "%s\nauto-K", drafter);
    else if (is_number(k)) snprintf(out, cap, "%s\nK = %s", drafter, k);
    else snprintf(out, cap, "%s\n%s", drafter, k);
}

// The category of row r (0-based: x = 1 + it), first[i] being category i's
// first row; f->n_categories if r has none (no drafter named).
static size_t config_of(const Figure *f, const size_t *first, const Table *t, const int *col,
                        size_t r) {
    size_t i = 0;
    if (!cell(t, r, col[DR_DRAFTER])[0]) return f->n_categories;
    while (i < f->n_categories && !same_config(t, col, first[i], r)) i++;
    return i;
}

// The (drafter, K) pairs in order of first appearance, as the x axis's
// categories; first[i] is category i's first row.
static int drafter_categories(Figure *f, size_t *first, const Table *t, const int *col, Error *e) {
    for (size_t r = 0; r < t->n_rows; r++) {
        char name[48];
        size_t i = config_of(f, first, t, col, r);
        if (i < f->n_categories || !cell(t, r, col[DR_DRAFTER])[0]) continue;
        if (i == MAX_CATEGORIES)
            return fail(e, "%s: more than %d (drafter, k) pairs; the figure can show %d", t->path,
                        MAX_CATEGORIES, MAX_CATEGORIES);
        config_name(name, sizeof(name), t, col, r);
        if (add_category(f, name, e)) return -1;
        first[i] = r;
    }
    return 0;
}

// What a bar's run measured, one per line, an empty field as "-": a, tokens
// per round, c ("0.63\n2.10\n0.14"; the x axis's label says which is which).
// Numbers alone: with tags the notes of two neighbouring bars were wider than
// the bars and overlapped.
static void drafter_note(char *out, size_t cap, const Table *t, const int *col, size_t r) {
    size_t len = 0;
    out[0] = '\0';
    for (int i = 0; i < 3 && len < cap; i++) {
        double v = num(t, r, col[DR_A + i]);
        len += (size_t)(isnan(v) ? snprintf(out + len, cap - len, "%s-", i ? "\n" : "")
                                 : snprintf(out + len, cap - len, "%s%.2f", i ? "\n" : "", v));
    }
}

// One temperature's bars: each configuration's speedup, its note above it
// (ending in FLAG_MARK where the bench flagged the row).
static int drafter_bars(Figure *f, const size_t *first, const Table *t, const int *col,
                        const char *key, size_t g, Error *e) {
    Group rows = {.t = t, .key_col = col[DR_TEMP], .key = key};
    char label[96], note[64];
    snprintf(label, sizeof(label), "T = %s", key);
    Series *s = add_series(f, label, PALETTE[g], SERIES_BARS, e);
    if (!s) return -1;
    for (size_t r = 0; r < t->n_rows; r++) {
        size_t i = config_of(f, first, t, col, r);
        if (!in_group(&rows, r) || i == f->n_categories) continue;
        drafter_note(note, sizeof(note), t, col, r);
        if (row_flagged(t, r)) strncat(note, "\n" FLAG_MARK, sizeof(note) - strlen(note) - 1);
        if (add_noted_point(f, s, (double)(i + 1), num(t, r, col[DR_SPEEDUP]), note, e)) return -1;
    }
    return 0;
}

static int drafters_figure(Figure *f, const Table *t, const char *title, Error *e) {
    static const char *const names[N_DRAFTER_COLS] = {
        "drafter", "k", "temperature", "speedup", "a", "tokens_per_round", "c"};
    const char *keys[MAX_GROUPS];
    size_t first[MAX_CATEGORIES], n;
    int col[N_DRAFTER_COLS];
    char ylabel[96];
    if (require_column(&col[DR_DRAFTER], t, names[DR_DRAFTER], e) ||
        require_column(&col[DR_K], t, names[DR_K], e) ||
        require_numbers(col + DR_TEMP, t, names + DR_TEMP, N_DRAFTER_COLS - DR_TEMP, e) ||
        group_keys(keys, &n, t, col[DR_TEMP], e))
        return -1;
    speedup_label(ylabel, sizeof(ylabel), t);
    build_figure(f, title, "above each bar, top to bottom: a; tokens per round; c = draft step / target step",
                 ylabel);
    if (drafter_categories(f, first, t, col, e)) return -1;
    for (size_t g = 0; g < n; g++)
        if (drafter_bars(f, first, t, col, keys[g], g, e)) return -1;
    size_t flagged = 0;
    for (size_t r = 0; r < t->n_rows; r++) flagged += row_flagged(t, r);
    if (flagged && !add_series(f, FLAG_MARK ": flagged by the bench (CSV column check)", INK, SERIES_XY, e))
        return -1; // a legend line, no data
    return add_hline(f, 1, "speedup = 1 (break-even)", e);
}

static int figure_drafters(Figure *f, const Table *tables, size_t n_tables, Error *e) {
    (void)n_tables;
    return drafters_figure(f, &tables[0], "Drafters on the shipped target", e);
}

// drafters_dram.csv: the same on the shipped target embedded in 325 MB (DRAM-bound)
static int figure_drafters_dram(Figure *f, const Table *tables, size_t n_tables, Error *e) {
    (void)n_tables;
    return drafters_figure(f, &tables[0], "Drafters on a DRAM-bound target (325 MB)", e);
}

// trees.csv (make bench-tree): target, temperature, kind ("chain" or "tree"),
// nodes (verified per pass: K for a chain), then the measurements; where the
// file has it, shape (--tree's argument, "2,1,1") names each tree.
enum { TR_TARGET, TR_TEMP, TR_KIND, TR_NODES, TR_Y, N_TREE_COLS };

// Each tree shape of column `shape` named once, beside the highest of its
// points (all trees of one shape have one node count, so one x).
static int tree_shape_notes(Figure *f, const Table *t, const int *col, int shape, Error *e) {
    for (size_t r = 0; r < t->n_rows; r++) {
        const char *name = cell(t, r, shape);
        size_t top = r, seen = 0;
        if (strcmp(cell(t, r, col[TR_KIND]), "tree") || !name[0] || isnan(num(t, r, col[TR_Y]))) continue;
        for (size_t q = 0; q < t->n_rows; q++) {
            if (strcmp(cell(t, q, col[TR_KIND]), "tree") || strcmp(cell(t, q, shape), name) ||
                isnan(num(t, q, col[TR_Y])))
                continue;
            seen |= q < r;
            if (num(t, q, col[TR_Y]) > num(t, top, col[TR_Y])) top = q;
        }
        if (seen) continue; // named at its first row
        char label[80];
        snprintf(label, sizeof(label), "%.24s, T = %.8s, tree", cell(t, top, col[TR_TARGET]), cell(t, top, col[TR_TEMP]));
        for (size_t i = 0; i < f->n_series; i++) {
            const Series *s = &f->series[i];
            for (size_t j = 0; !strcmp(s->label, label) && j < s->n; j++) {
                if (s->pts[j].x != num(t, top, col[TR_NODES]) || s->pts[j].y != num(t, top, col[TR_Y])) continue;
                if (f->n_notes == MAX_NOTES)
                    return fail(e, "figure \"%s\": more than %d notes", f->title, MAX_NOTES);
                Note *n = &f->notes[f->n_notes++];
                *n = (Note){.series = i, .point = j};
                snprintf(n->text, sizeof(n->text), "%s", name);
                j = s->n;
                i = f->n_series - 1;
            }
        }
    }
    return 0;
}

// Column ycol of trees.csv against the node budget: a line per (target,
// temperature, kind), a colour per (target, temperature), trees dashed.
static int tree_lines(Figure *f, const Table *t, const char *ycol, Error *e) {
    static const char *const names[TR_Y] = {"target", "temperature", "kind", "nodes"};
    int col[N_TREE_COLS];
    char groups[N_PALETTE][48], group[48], name[80];
    size_t n_groups = 0;
    for (int i = 0; i < TR_Y; i++)
        if (require_column(&col[i], t, names[i], e)) return -1;
    if (require_column(&col[TR_Y], t, ycol, e)) return -1;
    for (size_t r = 0; r < t->n_rows; r++) {
        const char *kind = cell(t, r, col[TR_KIND]);
        snprintf(group, sizeof(group), "%.24s, T = %.8s", cell(t, r, col[TR_TARGET]), cell(t, r, col[TR_TEMP]));
        snprintf(name, sizeof(name), "%s, %.8s", group, kind);
        size_t g = 0, i = 0;
        while (g < n_groups && strcmp(groups[g], group)) g++;
        if (g == N_PALETTE) return fail(e, "%s: more than %d (target, temperature) pairs", t->path, N_PALETTE);
        if (g == n_groups) snprintf(groups[n_groups++], sizeof(groups[0]), "%s", group);
        while (i < f->n_series && strcmp(f->series[i].label, name)) i++;
        Series *s = i < f->n_series ? &f->series[i] : add_curve(f, name, g, e);
        if (!s) return -1;
        if (!strcmp(kind, "tree")) s->pattern = DASHED;
        if (add_point(s, num(t, r, col[TR_NODES]), num(t, r, col[TR_Y]), e)) return -1;
    }
    for (size_t i = 0; i < f->n_series; i++) sort_by_x(&f->series[i]);
    int shape = find_column(t, "shape");
    return shape >= 0 ? tree_shape_notes(f, t, col, shape, e) : 0;
}

static int figure_trees_speedup(Figure *f, const Table *tables, size_t n_tables, Error *e) {
    (void)n_tables;
    build_figure(f, "Chains and trees: speedup by node budget", "nodes a verify pass checks (K for a chain)",
                 "speedup over the target alone");
    f->y_zero = 1;
    return tree_lines(f, &tables[0], "speedup", e) ? -1 : add_hline(f, 1, "speedup = 1 (break-even)", e);
}

static int figure_trees_tokens(Figure *f, const Table *tables, size_t n_tables, Error *e) {
    (void)n_tables;
    build_figure(f, "Chains and trees: tokens per pass by node budget", "nodes a verify pass checks (K for a chain)",
                 "tokens committed per verify pass");
    f->y_zero = 1;
    return tree_lines(f, &tables[0], "tokens_per_round", e);
}

// ----------------------------------------------------------------------------
// The figure list: what each is called, which CSVs it reads, who builds it

typedef int (*FigureBuilder)(Figure *f, const Table *tables, size_t n_tables, Error *e);

typedef struct {
    const char *name;               // the subcommand, and the PNG's name in `plot all`
    const char *inputs[MAX_INPUTS]; // the CSVs `plot all` looks for
    size_t n_required;              // the first n_required must exist; the rest are optional
    FigureBuilder build;
} FigureSpec;

// scale.csv (bench scale): tokens a second against the model's int8 size, both axes
// logarithmic: target-only, speculation at t = 0 and 1 (the better of K = 4 and auto-K),
// runq.c where the bench had it, and the read limit (the read loop on the same threads
// over the bytes a token reads) as a dashed line; each size named at its target point.
enum { SC_GB, SC_BYTES, SC_READ, SC_TARGET, SC_T0K4, SC_T0AUTO, SC_T1K4, SC_T1AUTO, SC_RUNQ, N_SCALE_COLS };
static int figure_scale(Figure *f, const Table *tables, size_t n_tables, Error *e) {
    static const char *const names[N_SCALE_COLS] = {"file_gb", "bytes_per_token", "read_gbs", "target_tok_s",
        "spec_t0_k4", "spec_t0_auto", "spec_t1_k4", "spec_t1_auto", "runq_tok_s"};
    static const char *const labels[5] = {"read limit (the read loop's GB/s / bytes a token)", "target alone (int8)",
        "speculation, t = 0 (K = 4 or auto-K, the better)", "speculation, t = 1 (the better)", "llama2.c runq.c"};
    const Table *t = &tables[0];
    int col[N_SCALE_COLS], shape = find_column(t, "shape");
    double runq = 0;
    (void)n_tables;
    if (require_numbers(col, t, names, N_SCALE_COLS, e)) return -1;
    for (size_t r = 0; r < t->n_rows; r++) runq = fmax(runq, num(t, r, col[SC_RUNQ]));
    build_figure(f, "Speed at real sizes: tokens a second against model size",
                 "model size in int8 (GB, log scale)", "tokens a second (log scale)");
    f->log_xy = 1;
    Series *s[5];
    for (int i = 0; i < 5 - (runq <= 0); i++) {
        if (!(s[i] = add_series(f, labels[i], i ? PALETTE[i - 1] : REFERENCE, SERIES_XY, e))) return -1;
        s[i]->width = i ? 2.0 : 1.5, s[i]->pattern = i ? SOLID : DASHED, s[i]->marker = i ? MARK_CIRCLE : MARK_NONE;
    }
    for (size_t r = 0; r < t->n_rows; r++) {
        double x = log10(num(t, r, col[SC_GB])), y[5] = {num(t, r, col[SC_READ]) * 1e9 / num(t, r, col[SC_BYTES]),
            num(t, r, col[SC_TARGET]), fmax(num(t, r, col[SC_T0K4]), num(t, r, col[SC_T0AUTO])),
            fmax(num(t, r, col[SC_T1K4]), num(t, r, col[SC_T1AUTO])), num(t, r, col[SC_RUNQ])};
        for (int i = 0; i < 5 - (runq <= 0); i++)
            if (y[i] > 0 && (i == 1 && shape >= 0 ? add_noted_point(f, s[i], x, log10(y[i]), cell(t, r, shape), e)
                                                  : add_point(s[i], x, log10(y[i]), e)))
                return -1;
    }
    return 0;
}

static const FigureSpec FIGURES[] = {
    {.name = "speedup_vs_k", .inputs = {"sweep_k.csv"}, .n_required = 1,
     .build = figure_speedup_vs_k},
    {.name = "acceptance_by_position", .inputs = {"sweep_k.csv"}, .n_required = 1,
     .build = figure_acceptance_by_position},
    {.name = "tokens_per_round", .inputs = {"sweep_k.csv"}, .n_required = 1,
     .build = figure_tokens_per_round},
    {.name = "alpha_vs_temperature", .inputs = {"sweep_temp.csv"}, .n_required = 1,
     .build = figure_alpha_vs_temperature},
    {.name = "training_loss", .inputs = {"train_target.csv", "train_base.csv", "train_draft.csv"},
     .n_required = 1, .build = figure_training_loss},
    {.name = "finetune_loss", .inputs = {"train_target.csv", "train_target_dropout.csv"}, .n_required = 2,
     .build = figure_finetune_loss},
    {.name = "verify_cost", .inputs = {"verify_cost.csv"}, .n_required = 1,
     .build = figure_verify_cost},
    {.name = "lenience", .inputs = {"lenience.csv"}, .n_required = 1, .build = figure_lenience},
    {.name = "drafters", .inputs = {"drafters.csv"}, .n_required = 1, .build = figure_drafters},
    {.name = "drafters_dram", .inputs = {"drafters_dram.csv"}, .n_required = 1, .build = figure_drafters_dram},
    {.name = "trees_speedup", .inputs = {"trees.csv"}, .n_required = 1, .build = figure_trees_speedup},
    {.name = "trees_tokens", .inputs = {"trees.csv"}, .n_required = 1, .build = figure_trees_tokens},
    {.name = "scale", .inputs = {"scale.csv"}, .n_required = 1, .build = figure_scale},
};
#define N_FIGURES (sizeof(FIGURES) / sizeof(FIGURES[0]))

static size_t max_inputs(const FigureSpec *spec) {
    size_t n = 0;
    while (n < MAX_INPUTS && spec->inputs[n]) n++;
    return n;
}

static const FigureSpec *find_figure(const char *name) {
    for (size_t i = 0; i < N_FIGURES; i++)
        if (!strcmp(FIGURES[i].name, name)) return &FIGURES[i];
    return NULL;
}

// Reads the CSVs, builds the figure and draws it on *c. Whatever the result,
// the caller frees c and f (both are safe to free after a failure).
static int render_from_files(Canvas *c, Axes *ax, Figure *f, const FigureSpec *spec,
                             const char *const *paths, size_t n, Error *e) {
    Table tables[MAX_INPUTS];
    size_t n_read = 0;
    int rc = 0;
    memset(tables, 0, sizeof(tables));
    memset(c, 0, sizeof(*c));
    memset(f, 0, sizeof(*f));
    if (n < spec->n_required || n > max_inputs(spec))
        rc = fail(e, "%s takes %zu to %zu CSV files, not %zu", spec->name, spec->n_required,
                  max_inputs(spec), n);
    for (; rc == 0 && n_read < n; n_read++) rc = read_table(&tables[n_read], paths[n_read], e);
    if (rc == 0) rc = spec->build(f, tables, n, e);
    if (rc == 0) rc = render_figure(c, ax, f, e);
    for (size_t i = 0; i < n_read; i++) free_table(&tables[i]); // a half-read one too
    return rc;
}

static int make_figure(const FigureSpec *spec, const char *const *paths, size_t n, const char *out,
                       Error *e) {
    Canvas c;
    Axes ax;
    Figure f;
    int rc = render_from_files(&c, &ax, &f, spec, paths, n, e);
    if (rc == 0) rc = write_png(&c, out, e);
    free_canvas(&c);
    free_figure(&f);
    return rc;
}

// ----------------------------------------------------------------------------
// Command line

static void usage(FILE *out) {
    fprintf(out, "usage: plot FIGURE IN.csv... OUT.png   draw one figure\n"
                 "       plot all [DIR]                  draw every figure whose CSVs are in DIR\n"
                 "                                       (default docs) as DIR/FIGURE.png\n"
                 "figures and the CSVs they read:\n");
    for (size_t i = 0; i < N_FIGURES; i++) {
        const FigureSpec *s = &FIGURES[i];
        fprintf(out, "  %-24s", s->name);
        for (size_t j = 0; j < s->n_required; j++) fprintf(out, " %s", s->inputs[j]);
        if (max_inputs(s) > s->n_required) fprintf(out, "\n  %-24s and any of", "");
        for (size_t j = s->n_required; j < max_inputs(s); j++) fprintf(out, " %s", s->inputs[j]);
        fprintf(out, "\n");
    }
}

static int file_exists(const char *path) {
    FILE *fp = fopen(path, "rb");
    if (fp) fclose(fp);
    return fp != NULL;
}

// DIR/name into out; -1 if it does not fit.
static int join_path(char *out, size_t cap, const char *dir, const char *name, Error *e) {
    int n = snprintf(out, cap, "%s/%s", dir, name);
    return n < 0 || (size_t)n >= cap ? fail(e, "%s/%s: path too long", dir, name) : 0;
}

// One figure of `plot all`: 0 drawn, 1 skipped (a CSV is missing), -1 failed.
static int plot_from_dir(const FigureSpec *spec, const char *dir, Error *e) {
    char store[MAX_INPUTS][4096], out[4096], png[256];
    const char *paths[MAX_INPUTS];
    size_t n = 0;
    snprintf(png, sizeof(png), "%s.png", spec->name);
    if (join_path(out, sizeof(out), dir, png, e)) return -1;
    for (size_t i = 0; i < max_inputs(spec); i++) {
        if (join_path(store[n], sizeof(store[n]), dir, spec->inputs[i], e)) return -1;
        if (file_exists(store[n])) {
            paths[n] = store[n];
            n++;
        } else if (i < spec->n_required) {
            printf("plot: skipped %s: %s not found\n", out, store[n]);
            return 1;
        }
    }
    if (make_figure(spec, paths, n, out, e)) return -1;
    printf("plot: wrote %s\n", out);
    return 0;
}

// `plot all DIR`: every figure whose CSVs are there; 1 if any failed.
static int plot_all(const char *dir) {
    size_t counts[3] = {0, 0, 0}; // drawn, skipped, failed
    for (size_t i = 0; i < N_FIGURES; i++) {
        Error e = {.msg = ""};
        int rc = plot_from_dir(&FIGURES[i], dir, &e);
        if (rc < 0) fprintf(stderr, "plot: %s.png failed: %s\n", FIGURES[i].name, e.msg);
        counts[rc < 0 ? 2 : rc]++;
    }
    printf("plot all %s: %zu written, %zu skipped, %zu failed\n", dir, counts[0], counts[1],
           counts[2]);
    return counts[2] ? 1 : 0;
}

static int ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !strcmp(s + n - m, suffix);
}

// The figure that `plot FIGURE IN.csv... OUT.png` names, or NULL (after a
// message where one helps) when the arguments are not that.
static const FigureSpec *figure_args(int argc, char **argv) {
    const FigureSpec *spec = argc >= 2 ? find_figure(argv[1]) : NULL;
    if (argc >= 2 && !spec) fprintf(stderr, "plot: unknown figure \"%s\"\n", argv[1]);
    if (spec && argc >= 3 && !ends_with(argv[argc - 1], ".png")) { // never overwrite a CSV
        fprintf(stderr, "plot: the last argument must be the output .png, not %s\n",
                argv[argc - 1]);
        return NULL;
    }
    return argc >= 4 ? spec : NULL;
}

static int usage_error(void) {
    usage(stderr);
    return 2;
}

// The exit status: 0 done, 1 a figure failed, 2 a usage error.
static int cli(int argc, char **argv) {
    if (argc >= 2 && !strcmp(argv[1], "all"))
        return argc <= 3 ? plot_all(argc == 3 ? argv[2] : "docs") : usage_error();
    if (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
        usage(stdout);
        return 0;
    }
    const FigureSpec *spec = figure_args(argc, argv);
    if (!spec) return usage_error();
    Error e = {.msg = ""};
    const char *out = argv[argc - 1];
    if (make_figure(spec, (const char *const *)(argv + 2), (size_t)argc - 3, out, &e)) {
        fprintf(stderr, "plot: %s\n", e.msg);
        return 1;
    }
    printf("plot: wrote %s\n", out);
    return 0;
}

#ifndef TESTING
int main(int argc, char **argv) { return cli(argc, argv); }
#endif
