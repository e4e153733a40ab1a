/* ompc-sched: runs a scheduling policy on a task graph written as JSON and
 * prints the schedule, to try policies and check them against published
 * examples without the runtime.
 *
 * The input is read by sched_json.c.  Any mistake in the input ends the
 * program with exit status 2 and one line on stderr, "ompc-sched: FILE:LINE:COL:
 * what is wrong", where LINE:COL is the offending token. */
#include "sched_json.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOOL_EXIT_ERROR 2

/* --------------------------------------------------------------- main */
/* Errors about the input as a whole: "ompc-sched: NAME: ...", status 2. */
static _Noreturn __attribute__((format(printf, 2, 3))) void tool_die(const char *name,
                                                                     const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "ompc-sched: %s: ", name);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(TOOL_EXIT_ERROR);
}

/* The whole input, into *text_p (*len_p bytes). */
static void tool_read(const char *name, const char *path, char **text_p, size_t *len_p)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!f)
        tool_die(name, "cannot open: %s", strerror(errno));
    char *text = NULL;
    size_t cap = 0, len = 0;
    for (;;) {
        if (cap - len < 4096) {
            cap = cap ? 2 * cap : 65536;
            char *nt = realloc(text, cap);
            if (!nt)
                tool_die(name, "out of memory");
            text = nt;
        }
        size_t got = fread(text + len, 1, cap - len, f);
        len += got;
        if (got == 0)
            break;
    }
    int err = ferror(f) ? errno : 0;
    if (f != stdin)
        fclose(f);
    if (err)
        tool_die(name, "cannot read: %s", strerror(err));
    *text_p = text;
    *len_p = len;
}

/* x with the fewest significant digits, from %g's 6 up to 17, that read
 * back as exactly x: a schedule's durations then equal its costs (at 6
 * digits a long schedule's start and finish round apart), and every time
 * %g printed exactly looks as it did.  The plain way, a printf and a
 * strtod per precision. */
static const char *tool_num_slow(char *buf, size_t size, double x)
{
    for (int prec = 6; prec < 17; prec++) {
        snprintf(buf, size, "%.*g", prec, x);
        if (strtod(buf, NULL) == x)
            return buf;
    }
    snprintf(buf, size, "%.17g", x);
    return buf;
}

/* Exact powers of ten (see tool_num). */
static const double tool_pow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                    1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                    1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* The text printf's "%.{p}g" gives for the p-digit decimal dig[0..p-1]
 * times 10^e (dig[0] not '0'), into buf (room for 32): fixed notation when
 * -4 <= e < p, else d.ddde+XX, trailing zeros and a bare point dropped. */
static const char *tool_g(char *buf, const char *dig, int p, int e)
{
    int q = p;
    while (q > 1 && dig[q - 1] == '0')
        q--;
    char *o = buf;
    if (e >= -4 && e < p) {
        if (e < 0) {
            *o++ = '0';
            *o++ = '.';
            for (int j = 0; j < -e - 1; j++)
                *o++ = '0';
            memcpy(o, dig, (size_t)q);
            o += q;
        } else {
            for (int j = 0; j <= e; j++)
                *o++ = j < q ? dig[j] : '0';
            if (q > e + 1) {
                *o++ = '.';
                memcpy(o, dig + e + 1, (size_t)(q - e - 1));
                o += q - e - 1;
            }
        }
        *o = '\0';
        return buf;
    }
    *o++ = dig[0];
    if (q > 1) {
        *o++ = '.';
        memcpy(o, dig + 1, (size_t)(q - 1));
        o += q - 1;
    }
    /* A double's exponent has at most 3 digits; printf shows at least 2. */
    int a = e < 0 ? -e : e;
    *o++ = 'e';
    *o++ = e < 0 ? '-' : '+';
    if (a >= 100)
        *o++ = (char)('0' + a / 100);
    *o++ = (char)('0' + a / 10 % 10);
    *o++ = (char)('0' + a % 10);
    *o = '\0';
    return buf;
}

/* dig[0..16] rounded to p < 17 digits into out[0..p-1], *e_p adjusted for
 * a carry out of the first digit; false when the dropped digits are 5000...
 * (rounding x twice, to 17 and then p digits, can differ from rounding it
 * once only there). */
static bool tool_round(const char *dig, int p, char *out, int *e_p)
{
    bool tie = dig[p] == '5';
    for (int j = p + 1; j < 17 && tie; j++)
        tie = dig[j] == '0';
    if (tie)
        return false;
    memcpy(out, dig, (size_t)p);
    if (dig[p] >= '5') {
        int j = p - 1;
        while (j >= 0 && out[j] == '9')
            out[j--] = '0';
        if (j >= 0) {
            out[j]++;
        } else { /* 99..9 became 100..0 */
            out[0] = '1';
            ++*e_p;
        }
    }
    return true;
}

/* tool_num_slow's answer from one printf of 17 digits instead of a printf
 * and a strtod per precision: 2*10^6 times made the plain way were most of
 * ompc-sched's time at 10^6 tasks.  x rounded to p < 17 digits is those 17
 * digits rounded to p except after a tie (tool_round; then the plain way).
 * For p <= 15 the p digits D times or divided by an exact power of ten is
 * one correctly rounded operation, which is what strtod returns for them,
 * so "reads back as x" needs no strtod; 16 digits do not fit that and take
 * strtod.  The text is printf's %g layout (tool_g). */
static const char *tool_num(char *buf, size_t size, double x)
{
    char d17[40], dig[17], r[17];
    if (!(x > 0.0) || !isfinite(x) || size < 32)
        return tool_num_slow(buf, size, x);
    /* "d.dddddddddddddddde[+-]X": 17 significant digits, exponent X. */
    snprintf(d17, sizeof(d17), "%.16e", x);
    dig[0] = d17[0];
    memcpy(dig + 1, d17 + 2, 16);
    int e10 = atoi(d17 + 19);
    for (int p = 6; p <= 16; p++) {
        int e = e10;
        if (!tool_round(dig, p, r, &e))
            return tool_num_slow(buf, size, x);
        if (p == 16) {
            tool_g(buf, r, p, e);
            return strtod(buf, NULL) == x ? buf : tool_g(buf, dig, 17, e10);
        }
        uint64_t D = 0;
        for (int j = 0; j < p; j++)
            D = D * 10 + (uint64_t)(r[j] - '0');
        int k = e - p + 1; /* the value is D * 10^k */
        if (k > 22 || k < -22)
            return tool_num_slow(buf, size, x);
        double v = k >= 0 ? (double)D * tool_pow10[k] : (double)D / tool_pow10[-k];
        if (v == x)
            return tool_g(buf, r, p, e);
    }
    return tool_g(buf, dig, 17, e10);
}

static void tool_usage(FILE *out)
{
    fprintf(out,
            "usage: ompc-sched [--policy NAME] [--seed N] [--candidates K] FILE.json\n"
            "\n"
            "Schedules the task graph in FILE.json (- reads standard input) and prints\n"
            "one line per task, in input order, then the schedule length:\n"
            "  task ID worker W start S finish F\n"
            "  makespan M\n"
            "\n"
            "  --policy NAME  ");
    for (size_t i = 0; sched_policy_at(i); i++)
        fprintf(out, "%s%s", i ? ", " : "", sched_policy_at(i)->name);
    fprintf(
        out,
        " (default heft)\n"
        "  --seed N       seed of the random policy (default 0)\n"
        "  --candidates K heft only: workers tried per task besides those of its\n"
        "                 inputs; 0 automatic (default: all up to %d workers,\n"
        "                 else %d), -1 all\n"
        "  --help         this text\n"
        "\n"
        "Input: {\"workers\": P,\n"
        "        \"tasks\": [{\"id\": I, \"cost\": [c_0, ..., c_P-1]}, ...],\n"
        "        (or \"cost\": C, the same on every worker)\n"
        "        \"edges\": [{\"from\": I, \"to\": J, \"cost\": C}, ...]}\n"
        "Optional: per task \"pinned\": W and \"ready\": [P times]; per edge\n"
        "\"bytes\"; top-level \"avail\": [P times], \"comm_lat\" and \"comm_inv_bw\":\n"
        "[P*P numbers, row p = from worker p].  Unknown keys are ignored.\n"
        "Every cost, time and byte count is in 0.." SCHED_JSON_NUM_MAX_STR ".\n"
        "Errors go to stderr as \"ompc-sched: FILE:LINE:COL: reason\", exit status 2.\n",
        SCHED_HEFT_FULL_MAX, SCHED_HEFT_CANDIDATES);
}

static _Noreturn __attribute__((format(printf, 1, 2))) void
tool_usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "ompc-sched: ");
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(TOOL_EXIT_ERROR);
}

int main(int argc, char **argv)
{
    const char *policy_name = "heft", *path = NULL;
    uint64_t seed = 0;
    int32_t candidates = 0;
    bool candidates_set = false;
    static const struct option longopts[] = {
        {"candidates", required_argument, NULL, 'k'},
        {"policy", required_argument, NULL, 'p'},
        {"seed", required_argument, NULL, 's'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    opterr = 0; /* the messages below instead of getopt's */
    int c;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (c) {
        case 'h': tool_usage(stdout); return 0;
        case 'p': policy_name = optarg; break;
        case 's': {
            char *end;
            errno = 0;
            unsigned long long s = strtoull(optarg, &end, 10);
            if (optarg[0] < '0' || optarg[0] > '9' || *end != '\0' || errno == ERANGE)
                tool_usage_error("--seed: \"%s\" is not an unsigned 64-bit integer",
                                 optarg);
            seed = (uint64_t)s;
            break;
        }
        case 'k': {
            char *end;
            errno = 0;
            long k = strtol(optarg, &end, 10);
            if (end == optarg || *end != '\0' || errno == ERANGE || k < -1 ||
                k > INT32_MAX)
                tool_usage_error("--candidates: \"%s\" is not -1, 0 or a worker count",
                                 optarg);
            candidates = (int32_t)k;
            candidates_set = true;
            break;
        }
        case ':': tool_usage_error("%s needs a value", argv[optind - 1]);
        default: /* optopt is the letter of an unknown short option */
            if (optopt)
                tool_usage_error("unknown option -%c (see ompc-sched --help)", optopt);
            tool_usage_error("unknown option %s (see ompc-sched --help)",
                             argv[optind - 1]);
        }
    }
    for (int a = optind; a < argc; a++) {
        if (path)
            tool_usage_error("more than one input file (%s)", argv[a]);
        path = argv[a];
    }
    const sched_policy_t *policy = sched_policy_find(policy_name);
    if (!policy)
        tool_usage_error("unknown policy \"%s\" (heft, roundrobin, random, locality)",
                         policy_name);
    if (candidates_set && strcmp(policy->name, "heft") != 0)
        tool_usage_error("--candidates is for the heft policy, not %s", policy->name);
    sched_heft_policy_t heft;
    sched_heft_policy_init(&heft, candidates);
    if (candidates_set)
        policy = &heft.policy;
    if (!path)
        tool_usage_error("no input file (see ompc-sched --help; - reads standard input)");

    /* The process ends right after any error, which frees everything:
     * the error paths below do not free. */
    const char *name = strcmp(path, "-") == 0 ? "<stdin>" : path;
    char *text, why[640];
    size_t len;
    tool_read(name, path, &text, &len);
    sched_json_t *js;
    if (sched_json_read(name, text, len, &js, why, sizeof(why)) != OMPC_OK) {
        fprintf(stderr, "ompc-sched: %s\n", why);
        exit(TOOL_EXIT_ERROR);
    }
    const sched_graph_t *gp = sched_json_graph(js), g = *gp;

    size_t nalloc = g.ntasks > 0 ? (size_t)g.ntasks : 1;
    int32_t *out_worker = calloc(nalloc, sizeof(int32_t));
    double *out_start = calloc(nalloc, sizeof(double));
    double *out_finish = calloc(nalloc, sizeof(double));
    if (!out_worker || !out_start || !out_finish)
        tool_die(name, "out of memory");
    sched_result_t r = {.worker = out_worker, .start = out_start, .finish = out_finish};
    ompc_status_t st = sched_run(policy, &g, seed, &r);
    if (st == OMPC_ERR_INVALID) {
        sched_json_explain_invalid(js, why, sizeof(why));
        fprintf(stderr, "ompc-sched: %s\n", why);
        exit(TOOL_EXIT_ERROR);
    }
    if (st != OMPC_OK)
        tool_die(name, "%s failed: %s", policy->name, ompc_status_str(st));
    /* SCHED_JSON_NUM_MAX keeps every sum finite; should a policy still produce
     * inf or NaN, no schedule is better than one that looks valid. */
    bool finite = isfinite(r.makespan);
    for (int64_t i = 0; i < g.ntasks && finite; i++)
        finite = isfinite(r.start[i]) && isfinite(r.finish[i]);
    if (!finite)
        tool_die(name,
                 "internal error: %s produced a time that is not finite "
                 "(makespan %g)",
                 policy->name, r.makespan);
    char b1[32], b2[32];
    for (int64_t i = 0; i < g.ntasks; i++)
        printf("task %lld worker %d start %s finish %s\n",
               (long long)sched_json_task_id(js, i), (int)r.worker[i],
               tool_num(b1, sizeof(b1), r.start[i]),
               tool_num(b2, sizeof(b2), r.finish[i]));
    printf("makespan %s\n", tool_num(b1, sizeof(b1), r.makespan));
    if (fflush(stdout) != 0 || ferror(stdout))
        tool_die(name, "cannot write the schedule: %s", strerror(errno));
    sched_json_free(js);
    free(out_finish);
    free(out_start);
    free(out_worker);
    free(text);
    return 0;
}
