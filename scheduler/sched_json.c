/* Reader of ompc-sched's task graphs in JSON (see sched_json.h).
 *
 * Jansson parses the input (RFC 8259: UTF-8, no comments, no trailing
 * commas, duplicate keys refused); this file checks the schema, reads the
 * fields it knows, ignores the others and builds the graph.  The first
 * mistake ends the read with one message, "NAME:LINE:COL: what is wrong",
 * where LINE:COL is the offending token or value.
 *
 * Jansson's values carry no position in the text, so a value is named by
 * its path (member and element indexes from the top) and a message finds
 * it again by walking the text, which jansson has accepted, along that
 * path (sj_locate).  Only messages need positions, so the walk happens
 * once, on failure.
 *
 * A mistake leaves through longjmp to the entry point, which frees
 * everything the reader holds (all of it hangs off sj_t) and returns a
 * status: no caller sees the jump, and no jump crosses jansson's code.
 *
 * Jansson's tree of a 10^6-task graph is gigabytes of small allocations
 * (docs/performance.md, "ompc-sched at 10^6 tasks"), so a graph is first
 * read by sj_fast, a strict reader of the common shape straight into the
 * same arrays.  It never reports anything: on whatever it does not handle
 * or finds wrong (a byte it does not expect, a repeated key, a key with an
 * escape, an ignored key whose value is not a plain ASCII string, number
 * or literal, a value out of range, a graph sj_build refuses) the
 * read starts over on jansson, which then gives the message, so every
 * message and every accepted graph is the one jansson's path gives
 * (fuzz_sched_json compares the two on every input). */
#include "sched_json.h"

#include "sched_internal.h"

#include <jansson.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "no position": messages about the file as a whole. */
#define SJ_NOPOS ((size_t)-1)
/* Every cost, time, communication value and byte count read is in
 * 0..SJ_NUM_MAX.  JSON has no inf or NaN and jansson refuses literals
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

/* Where a value is: the member (in an object, in input order, which
 * jansson keeps) or element (in an array) to take at each level from the
 * top-level value.  The deepest value read is a cost entry: top-level
 * member "tasks", a task, its member "cost", an entry. */
#define SJ_PATH_MAX 4
typedef struct sj_path {
    int n;
    int64_t step[SJ_PATH_MAX];
} sj_path_t;

/* A run of numbers in sj_t.num (a JSON array of numbers). */
typedef struct sj_array {
    int64_t off, n;
    sj_path_t path;
    bool has;
    bool scalar; /* one number, not an array ("cost": C on every worker) */
} sj_array_t;

typedef struct sj_task {
    sj_path_t path;
    int64_t id;
    bool has_id;
    int64_t pinned;
    sj_path_t pinned_path;
    sj_array_t cost, ready;
} sj_task_t;

typedef struct sj_edge {
    sj_path_t path;
    int64_t from, to;
    sj_path_t from_path, to_path;
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
    size_t len;
    /* Where a failure goes (see sj_fail), its status and message. */
    jmp_buf *fail;
    ompc_status_t st;
    char why[512];

    json_t *root; /* the parsed input, until the graph is built */
    bool fast;    /* read by sj_fast: a failure retries on jansson */
    sj_path_t top;
    int64_t workers;
    sj_path_t workers_path;
    bool has_workers, has_tasks, has_edges;
    sj_array_t avail, lat, inv_bw;
    sj_task_t *task;
    int64_t ntasks, task_cap;
    sj_edge_t *edge;
    int64_t nedges, edge_cap;
    double *num;
    int64_t nnum, num_cap;

    sj_idx_t *ids;
    /* When the ids are at most a few times as many as the tasks (0..n-1
     * most often): dense[id] = index or -1, for id <= dense_max, instead
     * of a binary search of ids per edge end (cache misses, most of the
     * read at 10^6 tasks). */
    int64_t *dense;
    int64_t dense_max;
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
    json_decref(t->root);
    free(t->cycle);
    free(t->out_finish);
    free(t->out_start);
    free(t->out_worker);
    free(t->gedge);
    free(t->pinned);
    free(t->ready);
    free(t->cost);
    free(t->ids);
    free(t->dense);
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

/* Every mistake found ends the read here: the message goes to t->why and
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

/* ------------------------------------------------- positions for messages */
static sj_path_t sj_path_add(sj_path_t p, int64_t step)
{
    OMPC_ASSERT(p.n < SJ_PATH_MAX);
    p.step[p.n++] = step;
    return p;
}

static bool sj_is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

static size_t sj_ws(const sj_t *t, size_t p)
{
    while (p < t->len && sj_is_ws(t->text[p]))
        p++;
    return p;
}

/* The byte after the value that starts at p.  The text is valid JSON
 * (jansson read all of it), so brackets balance outside strings and a
 * number or literal ends at white space, ',', ']' or '}'.  No recursion:
 * jansson accepts nesting deeper than a stack frame per level allows. */
static size_t sj_skip(const sj_t *t, size_t p)
{
    const char *s = t->text;
    if (p < t->len && s[p] != '"' && s[p] != '{' && s[p] != '[') {
        while (p < t->len && !sj_is_ws(s[p]) && s[p] != ',' && s[p] != ']' && s[p] != '}')
            p++;
        return p;
    }
    int64_t depth = 0;
    bool in_string = false;
    for (; p < t->len; p++) {
        char c = s[p];
        if (in_string) {
            if (c == '\\') {
                p++;
            } else if (c == '"') {
                in_string = false;
                if (depth == 0)
                    return p + 1;
            }
        } else if (c == '"') {
            in_string = true;
        } else if (c == '{' || c == '[') {
            depth++;
        } else if ((c == '}' || c == ']') && --depth == 0) {
            return p + 1;
        }
    }
    return t->len;
}

/* The first byte of the value at path. */
static size_t sj_locate(const sj_t *t, const sj_path_t *path)
{
    size_t p = sj_ws(t, 0);
    for (int d = 0; d < path->n && p < t->len; d++) {
        bool object = t->text[p] == '{';
        p = sj_ws(t, p + 1);
        for (int64_t k = 0; p < t->len; k++) {
            if (object) /* the key and the ':' */
                p = sj_ws(t, sj_ws(t, sj_skip(t, p)) + 1);
            if (k == path->step[d])
                break;
            /* the value and the ',' */
            p = sj_ws(t, sj_ws(t, sj_skip(t, p)) + 1);
        }
    }
    return p < t->len ? p : t->len;
}

/* "expected X" at the value at path, saying what is there instead (a JSON
 * value starts with a printable character). */
static _Noreturn void sj_expected(sj_t *t, const sj_path_t *path, const char *what)
{
    size_t pos = sj_locate(t, path);
    if (pos >= t->len)
        sj_die(t, pos, "expected %s, found the end of the input", what);
    sj_die(t, pos, "expected %s, found '%c'", what, t->text[pos]);
}

/* The number at path as the input wrote it, for messages: *lit_p and its
 * length. */
static int sj_literal(const sj_t *t, const sj_path_t *path, const char **lit_p)
{
    size_t pos = sj_locate(t, path);
    *lit_p = t->text + pos;
    return (int)(sj_skip(t, pos) - pos);
}

/* ------------------------------------------------- typed field readers */
static int64_t sj_int(sj_t *t, const json_t *v, const sj_path_t *path, const char *what,
                      int64_t min, int64_t max)
{
    if (!json_is_number(v))
        sj_expected(t, path, "an integer");
    const char *lit;
    if (!json_is_integer(v)) {
        int len = sj_literal(t, path, &lit);
        sj_die(t, sj_locate(t, path), "\"%s\" must be an integer, not %.*s", what, len,
               lit);
    }
    /* jansson refuses integers beyond json_int_t (long long). */
    json_int_t i = json_integer_value(v);
    if (i < min || i > max) {
        int len = sj_literal(t, path, &lit);
        sj_die(t, sj_locate(t, path), "\"%s\" = %.*s is out of range (%lld..%lld)", what,
               len, lit, (long long)min, (long long)max);
    }
    return (int64_t)i;
}

/* A number in 0..SJ_NUM_MAX (jansson refuses literals that overflow a
 * double); `index` is its place in an array, or -1 for a lone value. */
static double sj_value(sj_t *t, const json_t *v, const sj_path_t *path, const char *what,
                       int64_t index)
{
    if (!json_is_number(v))
        sj_expected(t, path, "a number");
    double d = json_number_value(v);
    if (d >= 0 && d <= SJ_NUM_MAX)
        return d;
    const char *lit;
    int len = sj_literal(t, path, &lit);
    size_t pos = sj_locate(t, path);
    if (d < 0 && index < 0)
        sj_die(t, pos, "\"%s\" = %.*s is negative", what, len, lit);
    if (d < 0)
        sj_die(t, pos, "\"%s\" entry %lld is negative (%.*s)", what, (long long)index,
               len, lit);
    if (index < 0)
        sj_die(t, pos, "\"%s\" = %.*s is above the limit " SJ_NUM_MAX_STR, what, len,
               lit);
    sj_die(t, pos, "\"%s\" entry %lld is above the limit " SJ_NUM_MAX_STR " (%.*s)", what,
           (long long)index, len, lit);
}

/* An array of numbers, appended to t->num. */
static void sj_num_array(sj_t *t, const json_t *v, sj_path_t path, const char *what,
                         sj_array_t *a)
{
    if (!json_is_array(v))
        sj_expected(t, &path, "an array of numbers");
    int64_t n = (int64_t)json_array_size(v);
    *a = (sj_array_t){.off = t->nnum, .n = n, .path = path, .has = true};
    sj_reserve(t, (void **)&t->num, &t->num_cap, t->nnum + n, sizeof(double));
    for (int64_t i = 0; i < n; i++) {
        sj_path_t ep = sj_path_add(path, i);
        t->num[t->nnum + i] = sj_value(t, json_array_get(v, (size_t)i), &ep, what, i);
    }
    t->nnum += n;
}

/* ------------------------------------------------------ the input schema */
static void sj_parse_task(sj_t *t, json_t *obj, sj_path_t path)
{
    if (!json_is_object(obj))
        sj_expected(t, &path, "a task (an object)");
    sj_task_t *k = &t->task[t->ntasks++];
    *k = (sj_task_t){.path = path, .pinned = -1};
    int64_t m = 0;
    for (void *it = json_object_iter(obj); it; it = json_object_iter_next(obj, it), m++) {
        const char *key = json_object_iter_key(it);
        json_t *v = json_object_iter_value(it);
        sj_path_t vp = sj_path_add(path, m);
        if (strcmp(key, "id") == 0) {
            k->id = sj_int(t, v, &vp, "id", 0, INT64_MAX);
            k->has_id = true;
        } else if (strcmp(key, "cost") == 0 && json_is_number(v)) {
            double c = sj_value(t, v, &vp, "cost", -1);
            sj_reserve(t, (void **)&t->num, &t->num_cap, t->nnum + 1, sizeof(double));
            k->cost = (sj_array_t){
                .off = t->nnum, .n = 1, .path = vp, .has = true, .scalar = true};
            t->num[t->nnum++] = c;
        } else if (strcmp(key, "cost") == 0) {
            sj_num_array(t, v, vp, "cost", &k->cost);
        } else if (strcmp(key, "ready") == 0) {
            sj_num_array(t, v, vp, "ready", &k->ready);
        } else if (strcmp(key, "pinned") == 0) {
            k->pinned = sj_int(t, v, &vp, "pinned", -1, INT32_MAX);
            k->pinned_path = vp;
        }
    }
}

static void sj_parse_edge(sj_t *t, json_t *obj, sj_path_t path)
{
    if (!json_is_object(obj))
        sj_expected(t, &path, "an edge (an object)");
    sj_edge_t *e = &t->edge[t->nedges++];
    *e = (sj_edge_t){.path = path};
    int64_t m = 0;
    for (void *it = json_object_iter(obj); it; it = json_object_iter_next(obj, it), m++) {
        const char *key = json_object_iter_key(it);
        json_t *v = json_object_iter_value(it);
        sj_path_t vp = sj_path_add(path, m);
        if (strcmp(key, "from") == 0) {
            e->from = sj_int(t, v, &vp, "from", 0, INT64_MAX);
            e->from_path = vp;
            e->has_from = true;
        } else if (strcmp(key, "to") == 0) {
            e->to = sj_int(t, v, &vp, "to", 0, INT64_MAX);
            e->to_path = vp;
            e->has_to = true;
        } else if (strcmp(key, "cost") == 0) {
            e->cost = sj_value(t, v, &vp, "cost", -1);
            e->has_cost = true;
        } else if (strcmp(key, "bytes") == 0) {
            e->bytes = sj_value(t, v, &vp, "bytes", -1);
            e->has_bytes = true;
        }
    }
}

static void sj_parse(sj_t *t)
{
    json_t *top = t->root;
    if (!json_is_object(top))
        sj_expected(t, &t->top, "a JSON object at the top level");
    int64_t m = 0;
    for (void *it = json_object_iter(top); it; it = json_object_iter_next(top, it), m++) {
        const char *key = json_object_iter_key(it);
        json_t *v = json_object_iter_value(it);
        sj_path_t vp = sj_path_add(t->top, m);
        if (strcmp(key, "workers") == 0) {
            t->workers = sj_int(t, v, &vp, "workers", 1, INT32_MAX);
            t->workers_path = vp;
            t->has_workers = true;
        } else if (strcmp(key, "tasks") == 0 || strcmp(key, "edges") == 0) {
            bool tasks = key[0] == 't';
            if (!json_is_array(v))
                sj_expected(t, &vp, tasks ? "an array of tasks" : "an array of edges");
            int64_t n = (int64_t)json_array_size(v);
            if (tasks)
                sj_reserve(t, (void **)&t->task, &t->task_cap, n, sizeof(sj_task_t));
            else
                sj_reserve(t, (void **)&t->edge, &t->edge_cap, n, sizeof(sj_edge_t));
            for (int64_t i = 0; i < n; i++) {
                json_t *elem = json_array_get(v, (size_t)i);
                if (tasks)
                    sj_parse_task(t, elem, sj_path_add(vp, i));
                else
                    sj_parse_edge(t, elem, sj_path_add(vp, i));
            }
            if (tasks)
                t->has_tasks = true;
            else
                t->has_edges = true;
        } else if (strcmp(key, "avail") == 0) {
            sj_num_array(t, v, vp, "avail", &t->avail);
        } else if (strcmp(key, "comm_lat") == 0) {
            sj_num_array(t, v, vp, "comm_lat", &t->lat);
        } else if (strcmp(key, "comm_inv_bw") == 0) {
            sj_num_array(t, v, vp, "comm_inv_bw", &t->inv_bw);
        }
    }
}

/* A mistake jansson found.  Its message names the token it stopped at
 * ("... near 'TOKEN'", for tokens of at most 20 bytes), and its position
 * counts the bytes it read, which end right after that token: the message
 * points at the token's first byte, like the checks above, else at the
 * first byte not read. */
static _Noreturn void sj_syntax_error(sj_t *t, const json_error_t *err)
{
    if (json_error_code(err) == json_error_out_of_memory)
        sj_nomem(t);
    char msg[sizeof(err->text)];
    snprintf(msg, sizeof(msg), "%s", err->text);
    for (char *c = msg; *c; c++) /* one line, whatever the input held */
        if ((unsigned char)*c < 0x20)
            *c = '?';
    size_t pos = err->position >= 0 && (size_t)err->position <= t->len
                     ? (size_t)err->position
                     : t->len;
    const char *near = strstr(msg, " near '");
    size_t msglen = strlen(msg);
    if (near && msglen > 0 && msg[msglen - 1] == '\'') {
        const char *tok = near + strlen(" near '");
        size_t toklen = (size_t)(msg + msglen - 1 - tok);
        if (toklen > 0 && toklen <= pos &&
            memcmp(t->text + pos - toklen, tok, toklen) == 0) {
            pos -= toklen;
            if (json_error_code(err) == json_error_duplicate_key)
                sj_die(t, pos, "duplicate key %.*s", (int)toklen, tok);
        }
    }
    sj_die(t, pos, "%s", msg);
}

/* -------------------------------------------- the fast path (sj_fast) */
/* Cursor of sj_fast over t->text.  Every function returns false for
 * "not handled here", never a message. */
typedef struct sj_cur {
    sj_t *t;
    size_t p;
} sj_cur_t;

static void sj_fws(sj_cur_t *c)
{
    while (c->p < c->t->len && sj_is_ws(c->t->text[c->p]))
        c->p++;
}

static bool sj_fchar(sj_cur_t *c, char ch)
{
    sj_fws(c);
    if (c->p < c->t->len && c->t->text[c->p] == ch) {
        c->p++;
        return true;
    }
    return false;
}

/* A key of printable ASCII without escapes, then ':'; *key_p and *len_p
 * point into the text. */
static bool sj_fkey(sj_cur_t *c, const char **key_p, size_t *len_p)
{
    if (!sj_fchar(c, '"'))
        return false;
    size_t b = c->p;
    while (c->p < c->t->len) {
        unsigned char ch = (unsigned char)c->t->text[c->p];
        if (ch == '"')
            break;
        if (ch < 0x20 || ch > 0x7e || ch == '\\')
            return false;
        c->p++;
    }
    if (c->p >= c->t->len)
        return false;
    *key_p = c->t->text + b;
    *len_p = c->p - b;
    c->p++;
    return sj_fchar(c, ':');
}

static bool sj_fkey_is(const char *key, size_t len, const char *want)
{
    return strlen(want) == len && memcmp(key, want, len) == 0;
}

/* Exact powers of ten: a decimal of at most 15 digits times or divided by
 * one of these is one correctly rounded operation, the value strtod
 * gives. */
static const double sj_pow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                  1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                  1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* A JSON number as jansson reads it: *is_int for the integer form (no
 * '.', 'e' or 'E': jansson's json_integer, *i set, out of long long not
 * handled), else a real as strtod reads it (overflow not handled). */
static bool sj_fnumber(sj_cur_t *c, bool *is_int, int64_t *i_p, double *d_p)
{
    sj_fws(c);
    const char *s = c->t->text;
    size_t len = c->t->len, b = c->p, p = c->p;
    bool neg = false;
    if (p < len && s[p] == '-') {
        neg = true;
        p++;
    }
    if (p >= len || s[p] < '0' || s[p] > '9')
        return false;
    uint64_t mant = 0;
    int digits = 0, exp10 = 0;
    bool zero_lead = s[p] == '0';
    size_t ib = p;
    while (p < len && s[p] >= '0' && s[p] <= '9') {
        if (digits < 19) {
            mant = mant * 10 + (uint64_t)(s[p] - '0');
            if (mant)
                digits++;
        } else {
            exp10++;
        }
        p++;
    }
    if (zero_lead && p - ib > 1)
        return false; /* leading zero: invalid JSON */
    bool real = false;
    if (p < len && s[p] == '.') {
        real = true;
        p++;
        if (p >= len || s[p] < '0' || s[p] > '9')
            return false;
        while (p < len && s[p] >= '0' && s[p] <= '9') {
            if (digits < 19) {
                mant = mant * 10 + (uint64_t)(s[p] - '0');
                if (mant)
                    digits++;
                exp10--;
            }
            p++;
        }
    }
    int eval = 0;
    if (p < len && (s[p] == 'e' || s[p] == 'E')) {
        real = true;
        p++;
        bool eneg = false;
        if (p < len && (s[p] == '+' || s[p] == '-'))
            eneg = s[p++] == '-';
        if (p >= len || s[p] < '0' || s[p] > '9')
            return false;
        while (p < len && s[p] >= '0' && s[p] <= '9') {
            if (eval < 10000)
                eval = eval * 10 + (s[p] - '0');
            p++;
        }
        exp10 += eneg ? -eval : eval;
    }
    /* The number must end where jansson's token ends. */
    if (p < len && !sj_is_ws(s[p]) && s[p] != ',' && s[p] != ']' && s[p] != '}')
        return false;
    c->p = p;
    *is_int = !real;
    if (!real) {
        /* At most 18 digits always fit; longer ones are left to jansson. */
        if (p - ib > 18)
            return false;
        *i_p = neg ? -(int64_t)mant : (int64_t)mant;
        *d_p = (double)*i_p;
        return true;
    }
    if (digits <= 15 && mant < (1ULL << 53) && exp10 >= -22 && exp10 <= 22) {
        double d = (double)mant;
        d = exp10 >= 0 ? d * sj_pow10[exp10] : d / sj_pow10[-exp10];
        *d_p = neg ? -d : d;
        return true;
    }
    char buf[64];
    if (p - b >= sizeof(buf))
        return false;
    memcpy(buf, s + b, p - b);
    buf[p - b] = '\0';
    double d = strtod(buf, NULL);
    if (isinf(d))
        return false; /* jansson refuses an overflowing real */
    *d_p = d;
    return true;
}

/* Keys sj_parse ignores, of one object: they may not repeat either. */
#define SJ_FUNKNOWN_MAX 8
typedef struct sj_funknown {
    const char *key[SJ_FUNKNOWN_MAX];
    size_t len[SJ_FUNKNOWN_MAX];
    int n;
} sj_funknown_t;

/* The value of a key sj_parse ignores: a string of printable ASCII
 * without escapes (a "comment"), a number, true, false or null. */
static bool sj_funknown(sj_cur_t *c, sj_funknown_t *u, const char *key, size_t len)
{
    if (u->n == SJ_FUNKNOWN_MAX)
        return false;
    for (int j = 0; j < u->n; j++)
        if (u->len[j] == len && memcmp(u->key[j], key, len) == 0)
            return false;
    u->key[u->n] = key;
    u->len[u->n++] = len;
    sj_fws(c);
    const char *s = c->t->text;
    size_t n = c->t->len, p = c->p;
    if (p >= n)
        return false;
    if (s[p] == '"') {
        for (p++; p < n && s[p] != '"'; p++)
            if ((unsigned char)s[p] < 0x20 || (unsigned char)s[p] > 0x7e || s[p] == '\\')
                return false;
        if (p >= n)
            return false;
        c->p = p + 1;
        return true;
    }
    if (s[p] == '-' || (s[p] >= '0' && s[p] <= '9')) {
        bool is_int;
        int64_t i;
        double d;
        return sj_fnumber(c, &is_int, &i, &d);
    }
    static const char *const lits[] = {"true", "false", "null"};
    for (size_t j = 0; j < 3; j++) {
        size_t l = strlen(lits[j]);
        if (n - p >= l && memcmp(s + p, lits[j], l) == 0 &&
            (p + l == n || sj_is_ws(s[p + l]) || s[p + l] == ',' || s[p + l] == ']' ||
             s[p + l] == '}')) {
            c->p = p + l;
            return true;
        }
    }
    return false;
}

/* A number in 0..SJ_NUM_MAX (sj_value's rule). */
static bool sj_fvalue(sj_cur_t *c, double *d_p)
{
    bool is_int;
    int64_t i;
    return sj_fnumber(c, &is_int, &i, d_p) && *d_p >= 0 && *d_p <= SJ_NUM_MAX;
}

/* An integer in min..max (sj_int's rule). */
static bool sj_fint(sj_cur_t *c, int64_t min, int64_t max, int64_t *i_p)
{
    bool is_int;
    double d;
    return sj_fnumber(c, &is_int, i_p, &d) && is_int && *i_p >= min && *i_p <= max;
}

/* An array of numbers at path, appended to t->num (sj_num_array). */
static bool sj_farray(sj_cur_t *c, sj_path_t path, sj_array_t *a)
{
    sj_t *t = c->t;
    if (!sj_fchar(c, '['))
        return false;
    *a = (sj_array_t){.off = t->nnum, .n = 0, .path = path, .has = true};
    if (sj_fchar(c, ']'))
        return true;
    do {
        sj_reserve(t, (void **)&t->num, &t->num_cap, t->nnum + 1, sizeof(double));
        if (!sj_fvalue(c, &t->num[t->nnum]))
            return false;
        t->nnum++;
        a->n++;
    } while (sj_fchar(c, ','));
    return sj_fchar(c, ']');
}

/* One key of an object sj_fobject reads, the cursor at its value: reads
 * the value of a key of its own and returns that key's bit (one per key,
 * so that a repeat is caught), 0 for a key not its own (read as one
 * sj_parse ignores), -1 for a value it does not take. */
typedef int (*sj_ffield_t)(sj_cur_t *c, void *obj, const char *key, size_t len,
                           sj_path_t vp);

/* The rest of an object whose '{' was read, its members at path.m: the
 * one loop of keys, repeats and unknown keys for every object sj_fast
 * reads. */
static bool sj_fobject(sj_cur_t *c, sj_path_t path, void *obj, sj_ffield_t field)
{
    if (sj_fchar(c, '}'))
        return true;
    unsigned seen = 0;
    sj_funknown_t unknown = {.n = 0};
    int64_t m = 0;
    do {
        const char *key;
        size_t kl;
        if (!sj_fkey(c, &key, &kl))
            return false;
        int bit = field(c, obj, key, kl, sj_path_add(path, m++));
        if (bit < 0 || (bit == 0 && !sj_funknown(c, &unknown, key, kl)) ||
            (seen & (unsigned)bit))
            return false;
        seen |= (unsigned)bit;
    } while (sj_fchar(c, ','));
    return sj_fchar(c, '}');
}

static int sj_ftask_field(sj_cur_t *c, void *obj, const char *key, size_t kl,
                          sj_path_t vp)
{
    sj_t *t = c->t;
    sj_task_t *k = obj;
    if (sj_fkey_is(key, kl, "id")) {
        if (!sj_fint(c, 0, INT64_MAX, &k->id))
            return -1;
        k->has_id = true;
        return 1;
    }
    if (sj_fkey_is(key, kl, "cost")) {
        sj_fws(c);
        if (c->p < t->len && t->text[c->p] == '[')
            return sj_farray(c, vp, &k->cost) ? 2 : -1;
        sj_reserve(t, (void **)&t->num, &t->num_cap, t->nnum + 1, sizeof(double));
        if (!sj_fvalue(c, &t->num[t->nnum]))
            return -1;
        k->cost = (sj_array_t){
            .off = t->nnum, .n = 1, .path = vp, .has = true, .scalar = true};
        t->nnum++;
        return 2;
    }
    if (sj_fkey_is(key, kl, "ready"))
        return sj_farray(c, vp, &k->ready) ? 4 : -1;
    if (sj_fkey_is(key, kl, "pinned")) {
        if (!sj_fint(c, -1, INT32_MAX, &k->pinned))
            return -1;
        k->pinned_path = vp;
        return 8;
    }
    return 0;
}

static int sj_fedge_field(sj_cur_t *c, void *obj, const char *key, size_t kl,
                          sj_path_t vp)
{
    sj_edge_t *e = obj;
    if (sj_fkey_is(key, kl, "from")) {
        if (!sj_fint(c, 0, INT64_MAX, &e->from))
            return -1;
        e->from_path = vp;
        e->has_from = true;
        return 1;
    }
    if (sj_fkey_is(key, kl, "to")) {
        if (!sj_fint(c, 0, INT64_MAX, &e->to))
            return -1;
        e->to_path = vp;
        e->has_to = true;
        return 2;
    }
    if (sj_fkey_is(key, kl, "cost")) {
        if (!sj_fvalue(c, &e->cost))
            return -1;
        e->has_cost = true;
        return 4;
    }
    if (sj_fkey_is(key, kl, "bytes")) {
        if (!sj_fvalue(c, &e->bytes))
            return -1;
        e->has_bytes = true;
        return 8;
    }
    return 0;
}

static bool sj_ftask(sj_cur_t *c, sj_path_t path)
{
    sj_t *t = c->t;
    if (!sj_fchar(c, '{'))
        return false;
    sj_reserve(t, (void **)&t->task, &t->task_cap, t->ntasks + 1, sizeof(sj_task_t));
    sj_task_t *k = &t->task[t->ntasks++];
    *k = (sj_task_t){.path = path, .pinned = -1};
    return sj_fobject(c, path, k, sj_ftask_field);
}

static bool sj_fedge(sj_cur_t *c, sj_path_t path)
{
    sj_t *t = c->t;
    if (!sj_fchar(c, '{'))
        return false;
    sj_reserve(t, (void **)&t->edge, &t->edge_cap, t->nedges + 1, sizeof(sj_edge_t));
    sj_edge_t *e = &t->edge[t->nedges++];
    *e = (sj_edge_t){.path = path};
    return sj_fobject(c, path, e, sj_fedge_field);
}

/* The top level's keys (obj is t). */
static int sj_ftop_field(sj_cur_t *c, void *obj, const char *key, size_t kl, sj_path_t vp)
{
    sj_t *t = obj;
    if (sj_fkey_is(key, kl, "workers")) {
        if (!sj_fint(c, 1, INT32_MAX, &t->workers))
            return -1;
        t->workers_path = vp;
        t->has_workers = true;
        return 1;
    }
    if (sj_fkey_is(key, kl, "tasks") || sj_fkey_is(key, kl, "edges")) {
        bool tasks = key[0] == 't';
        if (!sj_fchar(c, '['))
            return -1;
        if (!sj_fchar(c, ']')) {
            int64_t i = 0;
            do {
                sj_path_t ep = sj_path_add(vp, i++);
                if (!(tasks ? sj_ftask(c, ep) : sj_fedge(c, ep)))
                    return -1;
            } while (sj_fchar(c, ','));
            if (!sj_fchar(c, ']'))
                return -1;
        }
        if (tasks)
            t->has_tasks = true;
        else
            t->has_edges = true;
        return tasks ? 2 : 4;
    }
    if (sj_fkey_is(key, kl, "avail"))
        return sj_farray(c, vp, &t->avail) ? 8 : -1;
    if (sj_fkey_is(key, kl, "comm_lat"))
        return sj_farray(c, vp, &t->lat) ? 16 : -1;
    if (sj_fkey_is(key, kl, "comm_inv_bw"))
        return sj_farray(c, vp, &t->inv_bw) ? 32 : -1;
    return 0;
}

/* The whole input as sj_parse would read it from jansson's tree, or false
 * (t then holds a partial read, which the caller throws away). */
static bool sj_fast(sj_t *t)
{
    sj_cur_t cur = {t, 0}, *c = &cur;
    if (!sj_fchar(c, '{') || !sj_fobject(c, t->top, t, sj_ftop_field))
        return false;
    sj_fws(c);
    return c->p == t->len;
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
    if (t->dense)
        return id <= t->dense_max ? t->dense[id] : -1;
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

static void sj_array_check(sj_t *t, const sj_array_t *a, const char *what, int64_t want,
                           const char *unit)
{
    if (a->has && a->n != want)
        sj_die(t, sj_locate(t, &a->path), "\"%s\" has %lld entries, expected %lld (%s)",
               what, (long long)a->n, (long long)want, unit);
}

static void sj_build(sj_t *t, sched_graph_t *g)
{
    if (!t->has_workers)
        sj_die(t, sj_locate(t, &t->top), "missing \"workers\" (the number of workers)");
    if (!t->has_tasks)
        sj_die(t, sj_locate(t, &t->top), "missing \"tasks\"");
    int64_t P = t->workers, n = t->ntasks;
    if ((uint64_t)n > SIZE_MAX / sizeof(double) / (uint64_t)P)
        sj_die(t, sj_locate(t, &t->top), "%lld tasks on %lld workers are too many",
               (long long)n, (long long)P);
    bool any_ready = false, any_pinned = false;
    for (int64_t i = 0; i < n; i++) {
        const sj_task_t *k = &t->task[i];
        if (!k->has_id)
            sj_die(t, sj_locate(t, &k->path), "task has no \"id\"");
        if (!k->cost.has)
            sj_die(t, sj_locate(t, &k->path), "task %lld has no \"cost\"",
                   (long long)k->id);
        if (!k->cost.scalar && k->cost.n != P)
            sj_die(t, sj_locate(t, &k->cost.path),
                   "task %lld: \"cost\" has %lld entries, expected %lld (one per worker)",
                   (long long)k->id, (long long)k->cost.n, (long long)P);
        if (k->ready.has && k->ready.n != P)
            sj_die(
                t, sj_locate(t, &k->ready.path),
                "task %lld: \"ready\" has %lld entries, expected %lld (one per worker)",
                (long long)k->id, (long long)k->ready.n, (long long)P);
        if (k->pinned >= P)
            sj_die(t, sj_locate(t, &k->pinned_path),
                   "task %lld: \"pinned\" = %lld, but the workers are 0..%lld",
                   (long long)k->id, (long long)k->pinned, (long long)(P - 1));
        any_ready = any_ready || k->ready.has;
        any_pinned = any_pinned || k->pinned >= 0;
    }
    sj_array_check(t, &t->avail, "avail", P, "one per worker");
    sj_array_check(t, &t->lat, "comm_lat", P * P, "workers * workers");
    sj_array_check(t, &t->inv_bw, "comm_inv_bw", P * P, "workers * workers");
    if (t->lat.has != t->inv_bw.has)
        sj_die(t, sj_locate(t, t->lat.has ? &t->lat.path : &t->inv_bw.path),
               "\"comm_lat\" and \"comm_inv_bw\" go together");

    t->ids = sj_alloc(t, n, sizeof(*t->ids));
    bool increasing = true;
    for (int64_t i = 0; i < n; i++) {
        t->ids[i] = (sj_idx_t){t->task[i].id, i};
        increasing = increasing && (i == 0 || t->ids[i].id > t->ids[i - 1].id);
    }
    if (!increasing)
        qsort(t->ids, (size_t)n, sizeof(*t->ids), sj_idx_cmp);
    for (int64_t k = 1; k < n; k++)
        if (t->ids[k].id == t->ids[k - 1].id) {
            long line, col;
            sj_linecol(t, sj_locate(t, &t->task[t->ids[k - 1].index].path), &line, &col);
            sj_die(t, sj_locate(t, &t->task[t->ids[k].index].path),
                   "duplicate task id %lld (first at line %ld, column %ld)",
                   (long long)t->ids[k].id, line, col);
        }

    if (n > 0 && t->ids[n - 1].id / 4 < n) {
        t->dense_max = t->ids[n - 1].id;
        t->dense = sj_alloc(t, t->dense_max + 1, sizeof(int64_t));
        for (int64_t id = 0; id <= t->dense_max; id++)
            t->dense[id] = -1;
        for (int64_t k = 0; k < n; k++)
            t->dense[t->ids[k].id] = t->ids[k].index;
    }

    t->gedge = sj_alloc(t, t->nedges, sizeof(*t->gedge));
    for (int64_t k = 0; k < t->nedges; k++) {
        const sj_edge_t *e = &t->edge[k];
        if (!e->has_from)
            sj_die(t, sj_locate(t, &e->path), "edge has no \"from\"");
        if (!e->has_to)
            sj_die(t, sj_locate(t, &e->path), "edge has no \"to\"");
        if (!e->has_cost && !t->lat.has)
            sj_die(t, sj_locate(t, &e->path), "edge %lld -> %lld has no \"cost\"",
                   (long long)e->from, (long long)e->to);
        int64_t from = sj_lookup(t, e->from), to = sj_lookup(t, e->to);
        if (from < 0)
            sj_die(t, sj_locate(t, &e->from_path), "edge refers to unknown task id %lld",
                   (long long)e->from);
        if (to < 0)
            sj_die(t, sj_locate(t, &e->to_path), "edge refers to unknown task id %lld",
                   (long long)e->to);
        t->gedge[k] = (sched_edge_t){from, to, e->cost, e->bytes};
    }

    /* Every cost one number: identical workers, one cost per task
     * (cost_uniform), which a million tasks on a thousand workers need. */
    bool uniform = n > 0;
    for (int64_t i = 0; i < n && uniform; i++)
        uniform = t->task[i].cost.scalar;
    size_t uP = (size_t)P;
    t->cost = sj_alloc(t, uniform ? n : n * P, sizeof(double));
    if (any_ready)
        t->ready = sj_alloc(t, n * P, sizeof(double));
    if (any_pinned)
        t->pinned = sj_alloc(t, n, sizeof(int32_t));
    for (int64_t i = 0; i < n; i++) {
        const sj_task_t *k = &t->task[i];
        if (uniform)
            t->cost[i] = t->num[k->cost.off];
        else if (k->cost.scalar)
            for (size_t w = 0; w < uP; w++)
                t->cost[(size_t)i * uP + w] = t->num[k->cost.off];
        else
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
        .cost_uniform = uniform,
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
    return sched_json_read_flags(name, text, len, 0, js_p, why, whysz);
}

ompc_status_t sched_json_read_flags(const char *name, const char *text, size_t len,
                                    unsigned flags, sched_json_t **js_p, char *why,
                                    size_t whysz)
{
    sj_t *t = calloc(1, sizeof(*t));
    if (!t) {
        if (why && whysz > 0)
            snprintf(why, whysz, "%s: out of memory", name);
        return OMPC_ERR_NOMEM;
    }
    /* volatile: changed between setjmp and longjmp, read after. */
    volatile bool try_fast = !(flags & SCHED_JSON_NO_FAST);
    jmp_buf fail;
    t->name = name;
    t->text = text;
    t->len = len;
    t->fail = &fail;
    if (setjmp(fail)) {
        ompc_status_t st = t->st;
        if (t->fast && st == OMPC_ERR_INVALID) {
            /* sj_build refused what sj_fast read: start over on jansson,
             * whose read gives the message with the place. */
            sj_free(t);
            memset(t, 0, sizeof(*t));
            t->name = name;
            t->text = text;
            t->len = len;
            t->fail = &fail;
            try_fast = false;
            goto slow;
        }
        sj_why_copy(t, why, whysz);
        sj_free(t);
        free(t);
        return st;
    }
    /* JSON_DECODE_ANY: a top level that is not an object gets this
     * reader's message; JSON_ALLOW_NUL: "\u0000" in a string is valid JSON
     * (jansson still refuses it in keys). */
    if (sj_ws(t, 0) == len) /* clearer than jansson's "unexpected token" */
        sj_expected(t, &t->top, "a JSON object at the top level");
    if (try_fast) {
        if (sj_fast(t)) {
            t->fast = true;
            sj_build(t, &t->graph);
            goto done;
        }
        /* Not the fast path's: throw its partial read away. */
        sj_free(t);
        memset(t, 0, sizeof(*t));
        t->name = name;
        t->text = text;
        t->len = len;
        t->fail = &fail;
    }
slow:;
    json_error_t err;
    t->root = json_loadb(text, len,
                         JSON_REJECT_DUPLICATES | JSON_DECODE_ANY | JSON_ALLOW_NUL, &err);
    if (!t->root)
        sj_syntax_error(t, &err);
    sj_parse(t);
    sj_build(t, &t->graph);
    /* The graph holds copies; messages from here on need the text only. */
    json_decref(t->root);
    t->root = NULL;
done:
    t->fast = false;
    t->fail = NULL;
    *js_p = t;
    return OMPC_OK;
}

const sched_graph_t *sched_json_graph(const sched_json_t *js) { return &js->graph; }

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
            pos = sj_locate(t, &t->edge[k].path);
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
