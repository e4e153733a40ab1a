/* Reader of ompc-sched's task graphs in JSON (see sched_json.h).
 *
 * A small recursive-descent parser over the whole input (RFC 8259 grammar,
 * no extensions) that reads only the fields it knows and skips everything
 * else.  The first mistake in the input ends the parse with one message,
 * "NAME:LINE:COL: what is wrong", where LINE:COL is the offending token.
 * The parser is deep in recursion when it finds one, so it leaves through
 * longjmp to the entry point, which frees everything the reader holds (all
 * of it hangs off sj_t) and returns a status: no caller sees the jump. */
#include "sched_json.h"

#include "sched_internal.h"

#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "no position": messages about the file as a whole. */
#define SJ_NOPOS ((size_t)-1)
/* Deeper nesting than this in skipped values is refused rather than risked
 * on the stack. */
#define SJ_MAX_DEPTH 512
#define SJ_KEY_MAX 32
/* Every cost, time, communication value and byte count read is in
 * 0..SJ_NUM_MAX.  JSON has no inf or NaN and jr_number refuses literals
 * that overflow, but a finite 1e308 still makes the schedule's sums
 * infinite.  A schedule time is a sum along one path of costs, edge costs,
 * latencies plus bytes * inv_bw, and one ready or avail time: with every
 * input at most 1e15 a term is at most about 1e30, and a path through the
 * at most SIZE_MAX / 8 tasks sj_build accepts sums to under 1e49, far
 * below DBL_MAX, so no sum overflows.  The unit is the user's; 1e15 is 31
 * million years in seconds, 11 days in nanoseconds, 1 PB as a byte count,
 * so it refuses no real graph.  Negative times mean nothing: 0 is "now". */
#define SJ_NUM_MAX SCHED_JSON_NUM_MAX
#define SJ_NUM_MAX_STR SCHED_JSON_NUM_MAX_STR

/* A run of numbers in sj_t.num (a JSON array of numbers). */
typedef struct sj_array {
    int64_t off, n;
    size_t pos;
    bool has;
} sj_array_t;

typedef struct sj_task {
    size_t pos; /* the task's '{' */
    int64_t id;
    bool has_id;
    int64_t pinned;
    size_t pinned_pos;
    sj_array_t cost, ready;
} sj_task_t;

typedef struct sj_edge {
    size_t pos;
    int64_t from, to;
    size_t from_pos, to_pos;
    bool has_from, has_to, has_cost, has_bytes;
    double cost, bytes;
} sj_edge_t;

/* Task ids sorted, to find duplicates and resolve edges. */
typedef struct sj_idx {
    int64_t id, index;
} sj_idx_t;

struct sched_json {
    const char *name;
    const char *text;
    size_t len, pos;
    /* Where a failure goes (see sj_vdie), its status and message. */
    jmp_buf *fail;
    ompc_status_t st;
    char why[512];

    size_t top_pos;
    int64_t workers;
    size_t workers_pos;
    bool has_workers, has_tasks, has_edges;
    sj_array_t avail, lat, inv_bw;
    sj_task_t *task;
    int64_t ntasks, task_cap;
    sj_edge_t *edge;
    int64_t nedges, edge_cap;
    double *num;
    int64_t nnum, num_cap;

    sj_idx_t *ids;
    double *cost, *ready;
    int32_t *pinned;
    sched_edge_t *gedge;
    int32_t *out_worker;
    double *out_start, *out_finish;
    int64_t *cycle;
    sched_graph_t graph;
};
typedef struct sched_json sj_t;

static void sj_free(sj_t *t)
{
    free(t->cycle);
    free(t->out_finish);
    free(t->out_start);
    free(t->out_worker);
    free(t->gedge);
    free(t->pinned);
    free(t->ready);
    free(t->cost);
    free(t->ids);
    free(t->num);
    free(t->edge);
    free(t->task);
}

/* Line and column (in characters, counting UTF-8 sequences once) of byte
 * pos: only computed for a message, so a scan from the start is fine. */
static void sj_linecol(const sj_t *t, size_t pos, long *line_p, long *col_p)
{
    long line = 1, col = 1;
    for (size_t k = 0; k < pos && k < t->len; k++) {
        unsigned char c = (unsigned char)t->text[k];
        if (c == '\n') {
            line++;
            col = 1;
        } else if ((c & 0xc0) != 0x80) {
            col++;
        }
    }
    *line_p = line;
    *col_p = col;
}

/* Every mistake found ends the parse here: the message goes to t->why and
 * control to the public entry point's setjmp, which frees what t holds.
 * Nothing between that setjmp and here owns memory outside t. */
static _Noreturn __attribute__((format(printf, 4, 5))) void
sj_fail(sj_t *t, ompc_status_t st, size_t pos, const char *fmt, ...)
{
    size_t used = 0;
    int w;
    if (pos != SJ_NOPOS) {
        long line, col;
        sj_linecol(t, pos, &line, &col);
        w = snprintf(t->why, sizeof(t->why), "%s:%ld:%ld: ", t->name, line, col);
    } else {
        w = snprintf(t->why, sizeof(t->why), "%s: ", t->name);
    }
    if (w > 0)
        used = (size_t)w < sizeof(t->why) ? (size_t)w : sizeof(t->why) - 1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->why + used, sizeof(t->why) - used, fmt, ap);
    va_end(ap);
    t->st = st;
    longjmp(*t->fail, 1);
}

#define sj_die(t, pos, ...) sj_fail(t, OMPC_ERR_INVALID, pos, __VA_ARGS__)
#define sj_nomem(t) sj_fail(t, OMPC_ERR_NOMEM, SJ_NOPOS, "out of memory")

/* Makes room for `need` elements of `elem` bytes in *v. */
static void sj_reserve(sj_t *t, void **v, int64_t *cap, int64_t need, size_t elem)
{
    if (need <= *cap)
        return;
    int64_t c = *cap ? *cap : 16;
    while (c < need)
        c *= 2;
    void *nv = realloc(*v, (size_t)c * elem);
    if (!nv)
        sj_nomem(t);
    *v = nv;
    *cap = c;
}

/* ----------------------------------------------------------- JSON lexing */
static int jr_peek(const sj_t *t)
{
    return t->pos < t->len ? (unsigned char)t->text[t->pos] : -1;
}

static void jr_ws(sj_t *t)
{
    while (t->pos < t->len) {
        char c = t->text[t->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
            break;
        t->pos++;
    }
}

/* "expected X" at the current byte, saying what is there instead. */
static _Noreturn void jr_expected(sj_t *t, const char *what)
{
    int c = jr_peek(t);
    if (c < 0)
        sj_die(t, t->pos, "expected %s, found the end of the input", what);
    if (c >= 0x20 && c < 0x7f)
        sj_die(t, t->pos, "expected %s, found '%c'", what, c);
    sj_die(t, t->pos, "expected %s, found byte 0x%02x", what, (unsigned)c);
}

static int jr_hex(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Four hex digits after "\u". */
static unsigned jr_u16(sj_t *t, size_t esc_pos)
{
    unsigned v = 0;
    for (int k = 0; k < 4; k++) {
        int h = jr_hex(jr_peek(t));
        if (h < 0)
            sj_die(t, esc_pos, "invalid \\u escape: expected four hex digits");
        v = v * 16 + (unsigned)h;
        t->pos++;
    }
    return v;
}

/* Appends byte c to out (size outsz) at *n, counting past the end so the
 * caller sees the true length. */
static void jr_put(char *out, size_t outsz, size_t *n, unsigned c)
{
    if (out && *n + 1 < outsz)
        out[*n] = (char)c;
    (*n)++;
}

/* A string at the current position.  Decoded into out (NUL-terminated,
 * truncated to outsz-1 bytes; out may be NULL to skip); returns the decoded
 * length, which exceeds outsz-1 when truncated. */
static size_t jr_string(sj_t *t, char *out, size_t outsz)
{
    size_t start = t->pos, n = 0;
    if (jr_peek(t) != '"')
        jr_expected(t, "a string");
    t->pos++;
    for (;;) {
        int c = jr_peek(t);
        if (c < 0)
            sj_die(t, start, "unterminated string");
        if (c == '"') {
            t->pos++;
            break;
        }
        if (c < 0x20)
            sj_die(t, t->pos, "control character 0x%02x inside a string (write it "
                                "as an escape)", (unsigned)c);
        if (c != '\\') {
            jr_put(out, outsz, &n, (unsigned)c);
            t->pos++;
            continue;
        }
        size_t esc = t->pos++;
        int e = jr_peek(t);
        t->pos++;
        switch (e) {
        case '"': case '\\': case '/':
            jr_put(out, outsz, &n, (unsigned)e);
            break;
        case 'b': jr_put(out, outsz, &n, '\b'); break;
        case 'f': jr_put(out, outsz, &n, '\f'); break;
        case 'n': jr_put(out, outsz, &n, '\n'); break;
        case 'r': jr_put(out, outsz, &n, '\r'); break;
        case 't': jr_put(out, outsz, &n, '\t'); break;
        case 'u': {
            unsigned cp = jr_u16(t, esc);
            if (cp >= 0xdc00 && cp <= 0xdfff)
                sj_die(t, esc, "invalid \\u escape: unpaired low surrogate");
            if (cp >= 0xd800 && cp <= 0xdbff) {
                if (jr_peek(t) != '\\' || t->pos + 1 >= t->len || t->text[t->pos + 1] != 'u')
                    sj_die(t, esc, "invalid \\u escape: high surrogate without a low one");
                t->pos += 2;
                unsigned lo = jr_u16(t, esc);
                if (lo < 0xdc00 || lo > 0xdfff)
                    sj_die(t, esc, "invalid \\u escape: high surrogate without a low one");
                cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
            }
            /* UTF-8, so keys written with escapes match plain ones. */
            if (cp < 0x80) {
                jr_put(out, outsz, &n, cp);
            } else if (cp < 0x800) {
                jr_put(out, outsz, &n, 0xc0 | (cp >> 6));
                jr_put(out, outsz, &n, 0x80 | (cp & 0x3f));
            } else if (cp < 0x10000) {
                jr_put(out, outsz, &n, 0xe0 | (cp >> 12));
                jr_put(out, outsz, &n, 0x80 | ((cp >> 6) & 0x3f));
                jr_put(out, outsz, &n, 0x80 | (cp & 0x3f));
            } else {
                jr_put(out, outsz, &n, 0xf0 | (cp >> 18));
                jr_put(out, outsz, &n, 0x80 | ((cp >> 12) & 0x3f));
                jr_put(out, outsz, &n, 0x80 | ((cp >> 6) & 0x3f));
                jr_put(out, outsz, &n, 0x80 | (cp & 0x3f));
            }
            break;
        }
        default:
            if (e < 0)
                sj_die(t, start, "unterminated string");
            sj_die(t, esc, "invalid escape in a string");
        }
    }
    if (out && outsz > 0)
        out[n < outsz ? n : outsz - 1] = '\0';
    return n;
}

typedef struct jr_num {
    size_t pos, len; /* the literal in the input */
    double v;
    bool is_int;    /* written without fraction or exponent */
    bool int_fits;  /* ... and within int64_t */
    int64_t i;
} jr_num_t;

static bool jr_digit(int c)
{
    return c >= '0' && c <= '9';
}

static jr_num_t jr_number(sj_t *t)
{
    jr_num_t num = {.pos = t->pos, .is_int = true};
    if (jr_peek(t) == '-')
        t->pos++;
    if (jr_peek(t) == '0') {
        t->pos++;
    } else if (jr_digit(jr_peek(t))) {
        while (jr_digit(jr_peek(t)))
            t->pos++;
    } else {
        jr_expected(t, "a digit");
    }
    if (jr_peek(t) == '.') {
        t->pos++;
        if (!jr_digit(jr_peek(t)))
            jr_expected(t, "a digit after '.'");
        while (jr_digit(jr_peek(t)))
            t->pos++;
        num.is_int = false;
    }
    if (jr_peek(t) == 'e' || jr_peek(t) == 'E') {
        t->pos++;
        if (jr_peek(t) == '+' || jr_peek(t) == '-')
            t->pos++;
        if (!jr_digit(jr_peek(t)))
            jr_expected(t, "a digit in the exponent");
        while (jr_digit(jr_peek(t)))
            t->pos++;
        num.is_int = false;
    }
    num.len = t->pos - num.pos;
    /* strtod and strtoll accept more than JSON (hex, "inf", leading
     * blanks): they only ever see the literal checked above, copied out. */
    char small[64], *lit = small;
    if (num.len >= sizeof(small)) {
        lit = malloc(num.len + 1);
        if (!lit)
            sj_nomem(t);
    }
    memcpy(lit, t->text + num.pos, num.len);
    lit[num.len] = '\0';
    num.v = strtod(lit, NULL);
    if (num.is_int) {
        errno = 0;
        long long i = strtoll(lit, NULL, 10);
        num.int_fits = errno != ERANGE;
        num.i = (int64_t)i;
    }
    if (lit != small)
        free(lit);
    if (!isfinite(num.v))
        sj_die(t, num.pos, "number %.*s is out of range", (int)num.len,
               t->text + num.pos);
    return num;
}

static void jr_literal(sj_t *t, const char *word)
{
    size_t n = strlen(word);
    if (t->len - t->pos < n || memcmp(t->text + t->pos, word, n) != 0)
        sj_die(t, t->pos, "invalid literal (expected true, false or null)");
    t->pos += n;
}

static void jr_skip(sj_t *t, int depth);

/* Object members: call with *first = true right after the '{'; returns
 * false after the closing '}', else reads the key (into key, see
 * jr_string) and the ':' and leaves the value to the caller. */
static bool jr_member(sj_t *t, bool *first, char *key, size_t keysz, size_t *key_pos_p)
{
    jr_ws(t);
    if (jr_peek(t) == '}' && *first) {
        t->pos++;
        return false;
    }
    if (!*first) {
        if (jr_peek(t) == '}') {
            t->pos++;
            return false;
        }
        if (jr_peek(t) != ',')
            jr_expected(t, "',' or '}'");
        t->pos++;
        jr_ws(t);
    }
    *first = false;
    if (jr_peek(t) != '"')
        jr_expected(t, "a key (a string)");
    *key_pos_p = t->pos;
    /* Too long, or holding a \u0000: not a key we know. */
    size_t n = jr_string(t, key, keysz);
    if (n >= keysz || strlen(key) != n)
        key[0] = '\0';
    jr_ws(t);
    if (jr_peek(t) != ':')
        jr_expected(t, "':' after the key");
    t->pos++;
    jr_ws(t);
    return true;
}

/* Array elements, in the same way: false after the closing ']'. */
static bool jr_element(sj_t *t, bool *first)
{
    jr_ws(t);
    if (jr_peek(t) == ']' && *first) {
        t->pos++;
        return false;
    }
    if (!*first) {
        if (jr_peek(t) == ']') {
            t->pos++;
            return false;
        }
        if (jr_peek(t) != ',')
            jr_expected(t, "',' or ']'");
        t->pos++;
        jr_ws(t);
    }
    *first = false;
    return true;
}

static void jr_skip(sj_t *t, int depth)
{
    if (depth > SJ_MAX_DEPTH)
        sj_die(t, t->pos, "values nested deeper than %d levels", SJ_MAX_DEPTH);
    char key[SJ_KEY_MAX];
    size_t key_pos;
    bool first = true;
    int c = jr_peek(t);
    switch (c) {
    case '{':
        t->pos++;
        while (jr_member(t, &first, key, sizeof(key), &key_pos))
            jr_skip(t, depth + 1);
        break;
    case '[':
        t->pos++;
        while (jr_element(t, &first))
            jr_skip(t, depth + 1);
        break;
    case '"':
        jr_string(t, NULL, 0);
        break;
    case 't':
        jr_literal(t, "true");
        break;
    case 'f':
        jr_literal(t, "false");
        break;
    case 'n':
        jr_literal(t, "null");
        break;
    default:
        if (c == '-' || jr_digit(c))
            jr_number(t);
        else
            jr_expected(t, "a value");
    }
}

/* ------------------------------------------------- typed field readers */
static int64_t jr_int(sj_t *t, const char *what, int64_t min, int64_t max,
                      size_t *pos_p)
{
    int c = jr_peek(t);
    if (c != '-' && !jr_digit(c))
        jr_expected(t, "an integer");
    jr_num_t num = jr_number(t);
    if (!num.is_int)
        sj_die(t, num.pos, "\"%s\" must be an integer, not %.*s", what, (int)num.len,
               t->text + num.pos);
    if (!num.int_fits || num.i < min || num.i > max)
        sj_die(t, num.pos, "\"%s\" = %.*s is out of range (%lld..%lld)", what,
               (int)num.len, t->text + num.pos, (long long)min, (long long)max);
    if (pos_p)
        *pos_p = num.pos;
    return num.i;
}

/* A number in 0..SJ_NUM_MAX (jr_number already refused non-finite
 * ones); `index` is its place in an array, or -1 for a lone value. */
static double jr_value(sj_t *t, const char *what, int64_t index)
{
    int c = jr_peek(t);
    if (c != '-' && !jr_digit(c))
        jr_expected(t, "a number");
    jr_num_t num = jr_number(t);
    int len = (int)num.len;
    const char *lit = t->text + num.pos;
    if (num.v < 0 && index < 0)
        sj_die(t, num.pos, "\"%s\" = %.*s is negative", what, len, lit);
    if (num.v < 0)
        sj_die(t, num.pos, "\"%s\" entry %lld is negative (%.*s)", what,
               (long long)index, len, lit);
    if (num.v > SJ_NUM_MAX && index < 0)
        sj_die(t, num.pos, "\"%s\" = %.*s is above the limit " SJ_NUM_MAX_STR, what,
               len, lit);
    if (num.v > SJ_NUM_MAX)
        sj_die(t, num.pos, "\"%s\" entry %lld is above the limit " SJ_NUM_MAX_STR
                             " (%.*s)", what, (long long)index, len, lit);
    return num.v;
}

/* An array of numbers, appended to t->num. */
static void jr_num_array(sj_t *t, const char *what, sj_array_t *a)
{
    a->pos = t->pos;
    a->off = t->nnum;
    a->n = 0;
    a->has = true;
    if (jr_peek(t) != '[')
        jr_expected(t, "an array of numbers");
    t->pos++;
    bool first = true;
    while (jr_element(t, &first)) {
        double v = jr_value(t, what, a->n);
        sj_reserve(t, (void **)&t->num, &t->num_cap, t->nnum + 1, sizeof(double));
        t->num[t->nnum++] = v;
        a->n++;
    }
}

static void sj_dup_key(sj_t *t, bool seen, size_t key_pos, const char *key)
{
    if (seen)
        sj_die(t, key_pos, "duplicate key \"%s\"", key);
}

/* ------------------------------------------------------ the input schema */
static void sj_parse_task(sj_t *t)
{
    if (jr_peek(t) != '{')
        jr_expected(t, "a task (an object)");
    sj_reserve(t, (void **)&t->task, &t->task_cap, t->ntasks + 1, sizeof(sj_task_t));
    sj_task_t *k = &t->task[t->ntasks++];
    *k = (sj_task_t){.pos = t->pos, .pinned = -1};
    t->pos++;
    char key[SJ_KEY_MAX];
    size_t key_pos;
    bool first = true, has_pinned = false;
    while (jr_member(t, &first, key, sizeof(key), &key_pos)) {
        if (strcmp(key, "id") == 0) {
            sj_dup_key(t, k->has_id, key_pos, key);
            k->id = jr_int(t, "id", 0, INT64_MAX, NULL);
            k->has_id = true;
        } else if (strcmp(key, "cost") == 0) {
            sj_dup_key(t, k->cost.has, key_pos, key);
            jr_num_array(t, "cost", &k->cost);
        } else if (strcmp(key, "ready") == 0) {
            sj_dup_key(t, k->ready.has, key_pos, key);
            jr_num_array(t, "ready", &k->ready);
        } else if (strcmp(key, "pinned") == 0) {
            sj_dup_key(t, has_pinned, key_pos, key);
            k->pinned = jr_int(t, "pinned", -1, INT32_MAX, &k->pinned_pos);
            has_pinned = true;
        } else {
            jr_skip(t, 1);
        }
    }
}

static void sj_parse_edge(sj_t *t)
{
    if (jr_peek(t) != '{')
        jr_expected(t, "an edge (an object)");
    sj_reserve(t, (void **)&t->edge, &t->edge_cap, t->nedges + 1, sizeof(sj_edge_t));
    sj_edge_t *e = &t->edge[t->nedges++];
    *e = (sj_edge_t){.pos = t->pos};
    t->pos++;
    char key[SJ_KEY_MAX];
    size_t key_pos;
    bool first = true;
    while (jr_member(t, &first, key, sizeof(key), &key_pos)) {
        if (strcmp(key, "from") == 0) {
            sj_dup_key(t, e->has_from, key_pos, key);
            e->from = jr_int(t, "from", 0, INT64_MAX, &e->from_pos);
            e->has_from = true;
        } else if (strcmp(key, "to") == 0) {
            sj_dup_key(t, e->has_to, key_pos, key);
            e->to = jr_int(t, "to", 0, INT64_MAX, &e->to_pos);
            e->has_to = true;
        } else if (strcmp(key, "cost") == 0) {
            sj_dup_key(t, e->has_cost, key_pos, key);
            e->cost = jr_value(t, "cost", -1);
            e->has_cost = true;
        } else if (strcmp(key, "bytes") == 0) {
            sj_dup_key(t, e->has_bytes, key_pos, key);
            e->bytes = jr_value(t, "bytes", -1);
            e->has_bytes = true;
        } else {
            jr_skip(t, 1);
        }
    }
}

static void sj_parse(sj_t *t)
{
    jr_ws(t);
    if (jr_peek(t) != '{')
        jr_expected(t, "a JSON object at the top level");
    t->top_pos = t->pos++;
    char key[SJ_KEY_MAX];
    size_t key_pos;
    bool first = true;
    while (jr_member(t, &first, key, sizeof(key), &key_pos)) {
        if (strcmp(key, "workers") == 0) {
            sj_dup_key(t, t->has_workers, key_pos, key);
            t->workers = jr_int(t, "workers", 1, INT32_MAX, &t->workers_pos);
            t->has_workers = true;
        } else if (strcmp(key, "tasks") == 0 || strcmp(key, "edges") == 0) {
            bool tasks = key[0] == 't';
            sj_dup_key(t, tasks ? t->has_tasks : t->has_edges, key_pos, key);
            if (jr_peek(t) != '[')
                jr_expected(t, tasks ? "an array of tasks" : "an array of edges");
            t->pos++;
            bool efirst = true;
            while (jr_element(t, &efirst)) {
                if (tasks)
                    sj_parse_task(t);
                else
                    sj_parse_edge(t);
            }
            if (tasks)
                t->has_tasks = true;
            else
                t->has_edges = true;
        } else if (strcmp(key, "avail") == 0) {
            sj_dup_key(t, t->avail.has, key_pos, key);
            jr_num_array(t, "avail", &t->avail);
        } else if (strcmp(key, "comm_lat") == 0) {
            sj_dup_key(t, t->lat.has, key_pos, key);
            jr_num_array(t, "comm_lat", &t->lat);
        } else if (strcmp(key, "comm_inv_bw") == 0) {
            sj_dup_key(t, t->inv_bw.has, key_pos, key);
            jr_num_array(t, "comm_inv_bw", &t->inv_bw);
        } else {
            jr_skip(t, 1);
        }
    }
    jr_ws(t);
    if (t->pos < t->len)
        sj_die(t, t->pos, "unexpected data after the top-level object");
}

/* ------------------------------------------------------- graph assembly */
static int sj_idx_cmp(const void *pa, const void *pb)
{
    const sj_idx_t *a = pa, *b = pb;
    if (a->id != b->id)
        return a->id < b->id ? -1 : 1;
    return (a->index > b->index) - (a->index < b->index);
}

/* The index of task id, or -1. */
static int64_t sj_lookup(const sj_t *t, int64_t id)
{
    int64_t lo = 0, hi = t->ntasks;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (t->ids[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < t->ntasks && t->ids[lo].id == id ? t->ids[lo].index : -1;
}

static void *sj_alloc(sj_t *t, int64_t count, size_t size)
{
    void *p = calloc(count > 0 ? (size_t)count : 1, size);
    if (!p)
        sj_nomem(t);
    return p;
}

static void sj_array_check(sj_t *t, const sj_array_t *a, const char *what,
                           int64_t want, const char *unit)
{
    if (a->has && a->n != want)
        sj_die(t, a->pos, "\"%s\" has %lld entries, expected %lld (%s)", what,
               (long long)a->n, (long long)want, unit);
}

static void sj_build(sj_t *t, sched_graph_t *g)
{
    if (!t->has_workers)
        sj_die(t, t->top_pos, "missing \"workers\" (the number of workers)");
    if (!t->has_tasks)
        sj_die(t, t->top_pos, "missing \"tasks\"");
    int64_t P = t->workers, n = t->ntasks;
    if ((uint64_t)n > SIZE_MAX / sizeof(double) / (uint64_t)P)
        sj_die(t, t->top_pos, "%lld tasks on %lld workers are too many",
               (long long)n, (long long)P);
    bool any_ready = false, any_pinned = false;
    for (int64_t i = 0; i < n; i++) {
        const sj_task_t *k = &t->task[i];
        if (!k->has_id)
            sj_die(t, k->pos, "task has no \"id\"");
        if (!k->cost.has)
            sj_die(t, k->pos, "task %lld has no \"cost\"", (long long)k->id);
        if (k->cost.n != P)
            sj_die(t, k->cost.pos, "task %lld: \"cost\" has %lld entries, expected "
                                     "%lld (one per worker)", (long long)k->id,
                     (long long)k->cost.n, (long long)P);
        if (k->ready.has && k->ready.n != P)
            sj_die(t, k->ready.pos, "task %lld: \"ready\" has %lld entries, expected "
                                      "%lld (one per worker)", (long long)k->id,
                     (long long)k->ready.n, (long long)P);
        if (k->pinned >= P)
            sj_die(t, k->pinned_pos, "task %lld: \"pinned\" = %lld, but the workers "
                                       "are 0..%lld", (long long)k->id,
                     (long long)k->pinned, (long long)(P - 1));
        any_ready = any_ready || k->ready.has;
        any_pinned = any_pinned || k->pinned >= 0;
    }
    sj_array_check(t, &t->avail, "avail", P, "one per worker");
    sj_array_check(t, &t->lat, "comm_lat", P * P, "workers * workers");
    sj_array_check(t, &t->inv_bw, "comm_inv_bw", P * P, "workers * workers");
    if (t->lat.has != t->inv_bw.has)
        sj_die(t, t->lat.has ? t->lat.pos : t->inv_bw.pos,
               "\"comm_lat\" and \"comm_inv_bw\" go together");

    t->ids = sj_alloc(t, n, sizeof(*t->ids));
    for (int64_t i = 0; i < n; i++)
        t->ids[i] = (sj_idx_t){t->task[i].id, i};
    qsort(t->ids, (size_t)n, sizeof(*t->ids), sj_idx_cmp);
    for (int64_t k = 1; k < n; k++)
        if (t->ids[k].id == t->ids[k - 1].id) {
            long line, col;
            sj_linecol(t, t->task[t->ids[k - 1].index].pos, &line, &col);
            sj_die(t, t->task[t->ids[k].index].pos,
                   "duplicate task id %lld (first at line %ld, column %ld)",
                   (long long)t->ids[k].id, line, col);
        }

    t->gedge = sj_alloc(t, t->nedges, sizeof(*t->gedge));
    for (int64_t k = 0; k < t->nedges; k++) {
        const sj_edge_t *e = &t->edge[k];
        if (!e->has_from)
            sj_die(t, e->pos, "edge has no \"from\"");
        if (!e->has_to)
            sj_die(t, e->pos, "edge has no \"to\"");
        if (!e->has_cost && !t->lat.has)
            sj_die(t, e->pos, "edge %lld -> %lld has no \"cost\"", (long long)e->from,
                   (long long)e->to);
        int64_t from = sj_lookup(t, e->from), to = sj_lookup(t, e->to);
        if (from < 0)
            sj_die(t, e->from_pos, "edge refers to unknown task id %lld",
                   (long long)e->from);
        if (to < 0)
            sj_die(t, e->to_pos, "edge refers to unknown task id %lld", (long long)e->to);
        t->gedge[k] = (sched_edge_t){from, to, e->cost, e->bytes};
    }

    size_t uP = (size_t)P;
    t->cost = sj_alloc(t, n * P, sizeof(double));
    if (any_ready)
        t->ready = sj_alloc(t, n * P, sizeof(double));
    if (any_pinned)
        t->pinned = sj_alloc(t, n, sizeof(int32_t));
    for (int64_t i = 0; i < n; i++) {
        const sj_task_t *k = &t->task[i];
        memcpy(t->cost + (size_t)i * uP, t->num + k->cost.off, uP * sizeof(double));
        if (k->ready.has)
            memcpy(t->ready + (size_t)i * uP, t->num + k->ready.off, uP * sizeof(double));
        if (t->pinned)
            t->pinned[i] = (int32_t)k->pinned;
    }
    *g = (sched_graph_t){
        .nworkers = (int32_t)P,
        .ntasks = n,
        .cost = t->cost,
        .pinned = t->pinned,
        .ready = t->ready,
        .avail = t->avail.has ? t->num + t->avail.off : NULL,
        .nedges = t->nedges,
        .edges = t->gedge,
        .comm_lat = t->lat.has ? t->num + t->lat.off : NULL,
        .comm_inv_bw = t->inv_bw.has ? t->num + t->inv_bw.off : NULL,
    };
}

/* Copies t->why to the caller's buffer. */
static void sj_why_copy(const sj_t *t, char *why, size_t whysz)
{
    if (why && whysz > 0)
        snprintf(why, whysz, "%s", t->why);
}

ompc_status_t sched_json_read(const char *name, const char *text, size_t len,
                              sched_json_t **js_p, char *why, size_t whysz)
{
    sj_t *t = calloc(1, sizeof(*t));
    if (!t) {
        if (why && whysz > 0)
            snprintf(why, whysz, "%s: out of memory", name);
        return OMPC_ERR_NOMEM;
    }
    jmp_buf fail;
    t->name = name;
    t->text = text;
    t->len = len;
    t->fail = &fail;
    if (setjmp(fail)) {
        ompc_status_t st = t->st;
        sj_why_copy(t, why, whysz);
        sj_free(t);
        free(t);
        return st;
    }
    sj_parse(t);
    sj_build(t, &t->graph);
    t->fail = NULL;
    *js_p = t;
    return OMPC_OK;
}

const sched_graph_t *sched_json_graph(const sched_json_t *js)
{
    return &js->graph;
}

int64_t sched_json_task_id(const sched_json_t *js, int64_t index)
{
    return js->task[index].id;
}

/* The library names tasks by index; the user wrote ids, so a cycle is
 * found again here and printed with ids, at the first edge on it. */
static _Noreturn void sj_explain_invalid(sj_t *t, const char *msg)
{
    const sched_graph_t *g = &t->graph;
    int64_t len = 0;
    free(t->cycle);
    t->cycle = sj_alloc(t, g->ntasks, sizeof(int64_t));
    if (sched_cycle_find(g, t->cycle, &len) != OMPC_OK || len == 0)
        sj_die(t, SJ_NOPOS, "invalid graph: %s", msg);
    size_t pos = SJ_NOPOS;
    for (int64_t k = 0; k < g->nedges && pos == SJ_NOPOS; k++)
        if (g->edges[k].from == t->cycle[0] && g->edges[k].to == t->cycle[1 % len])
            pos = t->edge[k].pos;
    char buf[400];
    size_t used = 0;
    for (int64_t a = 0; a <= len && used < sizeof(buf); a++) {
        int w;
        if (a >= 8 && a < len) {
            if (a > 8)
                continue;
            w = snprintf(buf + used, sizeof(buf) - used, " -> ...");
        } else {
            w = snprintf(buf + used, sizeof(buf) - used, "%stask %lld", a ? " -> " : "",
                         (long long)t->task[t->cycle[a % len]].id);
        }
        if (w < 0)
            break;
        used += (size_t)w;
    }
    sj_die(t, pos, "the edges form a cycle: %s", buf);
}

void sched_json_explain_invalid(sched_json_t *js, char *why, size_t whysz)
{
    char msg[400];
    snprintf(msg, sizeof(msg), "%s", sched_last_error());
    jmp_buf fail;
    js->fail = &fail;
    if (!setjmp(fail))
        sj_explain_invalid(js, msg);
    js->fail = NULL;
    sj_why_copy(js, why, whysz);
}

void sched_json_free(sched_json_t *js)
{
    if (!js)
        return;
    sj_free(js);
    free(js);
}
