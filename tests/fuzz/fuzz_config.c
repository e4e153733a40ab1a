/* Fuzz target: the OMPC_* environment parser (common/ompc_config.c).
 *
 * The input is an environment: lines NAME=value (a later line wins; a NUL
 * ends a value, as in a real environment).  Wrong answers: a status other
 * than OK or INVALID, a message that does not start 'environment variable
 * OMPC_', or a parse that differs when repeated. */
#include "fuzz.h"

#include "ompc_common.h"

#include <stdlib.h>
#include <string.h>

const char *const fuzz_dict[] = {
    "OMPC_NUM_COMMS=",
    "OMPC_CHUNK_SIZE=",
    "OMPC_INLINE_MAX=",
    "OMPC_SPIN_US=",
    "OMPC_POLL_MAX_US=",
    "OMPC_DOORBELL=",
    "OMPC_PEER_TIMEOUT=",
    "OMPC_DEVICE_VA=",
    "OMPC_SCHEDULER=",
    "OMPC_LOG_LEVEL=",
    "OMPC_SCHED_SEED=",
    "OMPC_PERF_MODEL=",
    "auto",
    "heft",
    "locality",
    "TRACE",
    "0.1",
    "1e9",
    "0x1p-4",
    "=",
    "\n",
    NULL,
};

typedef struct env {
    char *text;    /* the input, NUL-terminated, '\n' and '=' cut to NULs */
    char **name, **value;
    size_t n;
} env_t;

static const char *env_lookup(const char *name, void *arg)
{
    const env_t *e = arg;
    const char *found = NULL;
    for (size_t i = 0; i < e->n; i++)
        if (strcmp(e->name[i], name) == 0)
            found = e->value[i];
    return found;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    env_t e = {.text = malloc(size + 1)};
    size_t cap = size / 2 + 1;
    e.name = malloc(cap * sizeof(*e.name));
    e.value = malloc(cap * sizeof(*e.value));
    if (!e.text || !e.name || !e.value)
        fuzz_fail("out of memory");
    memcpy(e.text, data, size);
    e.text[size] = '\0';
    char *line = e.text, *end = e.text + size;
    while (line < end) {
        char *nl = memchr(line, '\n', (size_t)(end - line));
        if (nl)
            *nl = '\0';
        char *eq = strchr(line, '=');
        if (eq && e.n < cap) {
            *eq = '\0';
            e.name[e.n] = line;
            e.value[e.n++] = eq + 1;
        }
        line = nl ? nl + 1 : end;
    }

    ompc_config_t c1, c2;
    char why1[512] = "", why2[512] = "";
    ompc_status_t s1 = ompc_config_parse(env_lookup, &e, &c1, why1, sizeof(why1));
    ompc_status_t s2 = ompc_config_parse(env_lookup, &e, &c2, why2, sizeof(why2));
    if (s1 != OMPC_OK && s1 != OMPC_ERR_INVALID)
        fuzz_fail("status %d (%s)", (int)s1, ompc_status_str(s1));
    if (s1 != s2 || strcmp(why1, why2) != 0 ||
        (s1 == OMPC_OK && memcmp(&c1, &c2, sizeof(c1)) != 0))
        fuzz_fail("two parses of one environment differ");
    if (s1 != OMPC_OK && strncmp(why1, "environment variable OMPC_", 26) != 0)
        fuzz_fail("the message does not name the variable: \"%s\"", why1);
    if (s1 == OMPC_OK) {
        /* Spot checks of ranges every value must respect. */
        if (c1.num_comms < 1 || c1.chunk_size < 4096 || c1.peer_timeout_ms < 100 ||
            c1.log_level < 0 || c1.log_level > 4 || !c1.scheduler || !*c1.scheduler ||
            c1.spin_us < -1 || (!c1.doorbell && c1.poll_max_us > 10000) ||
            !c1.perf_model || !c1.trace)
            fuzz_fail("accepted an out-of-range configuration");
    }
    free(e.value);
    free(e.name);
    free(e.text);
    return 0;
}
