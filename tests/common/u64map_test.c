/* ompc_u64map against a model: random puts, gets, removes and remove_if
 * calls on several key patterns (dense, strided by powers of two so that
 * the low bits agree, random 64-bit, and 0 and UINT64_MAX themselves),
 * checked after every step against a plain array of the keys that should
 * be there.  Small key universes make long probe runs and many deletions
 * inside them, which is where backward-shift deletion can lose a key. */
#include "ompc_u64map.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond, ...)                                                                 \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            fprintf(stderr, "u64map_test: %s:%d: %s: ", __FILE__, __LINE__, #cond);      \
            fprintf(stderr, __VA_ARGS__);                                                \
            fputc('\n', stderr);                                                         \
            exit(1);                                                                     \
        }                                                                                \
    } while (0)

/* The model: universe[k] is key k's 64-bit value, present[k] whether it
 * is in the map and val[k] its value. */
#define UNIVERSE 700
static uint64_t universe[UNIVERSE], val[UNIVERSE];
static unsigned char present[UNIVERSE];
static size_t nkeys; /* universe[0..nkeys-1] in use */

static uint64_t rng_state;
static uint64_t rng(void)
{
    /* splitmix64: a fixed sequence per seed, so a failure repeats */
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void check_all(const ompc_u64map_t *m, const char *when)
{
    size_t n = 0;
    for (size_t k = 0; k < nkeys; k++) {
        uint64_t v = ~0ull;
        bool got = ompc_u64map_get(m, universe[k], &v);
        CHECK(got == (bool)present[k], "%s: key %" PRIu64 " is%s in the map", when,
              universe[k], got ? "" : " not");
        CHECK(!got || v == val[k], "%s: key %" PRIu64 " has %" PRIu64 ", not %" PRIu64,
              when, universe[k], v, val[k]);
        n += present[k];
    }
    CHECK(ompc_u64map_size(m) == n, "%s: size %zu, expected %zu", when,
          ompc_u64map_size(m), n);
    CHECK(m->cap == 0 || 2 * m->n <= m->cap, "%s: %zu keys in %zu slots", when, m->n,
          m->cap);
    /* Iteration gives each key once. */
    size_t pos = 0, seen = 0;
    uint64_t key, v;
    while (ompc_u64map_next(m, &pos, &key, &v)) {
        size_t k = 0;
        while (k < nkeys && universe[k] != key)
            k++;
        CHECK(k < nkeys && present[k] && v == val[k],
              "%s: iteration gave key %" PRIu64 " that is not in the map", when, key);
        seen++;
    }
    CHECK(seen == n, "%s: iteration gave %zu keys of %zu", when, seen, n);
}

static bool drop_odd_val(uint64_t key, uint64_t v, void *arg)
{
    (void)key;
    (*(size_t *)arg)++;
    return v & 1;
}

static void run(const char *pattern, unsigned seed, size_t n, int steps)
{
    rng_state = seed;
    nkeys = n;
    for (size_t k = 0; k < nkeys; k++) {
        if (!strcmp(pattern, "dense"))
            universe[k] = k + 1;
        else if (!strcmp(pattern, "stride32"))
            universe[k] = (uint64_t)k << 32;
        else if (!strcmp(pattern, "stride4k"))
            universe[k] = (uint64_t)k * 4096 + 0x7f0000000000ull;
        else
            universe[k] = rng();
    }
    universe[0] = 0;
    universe[nkeys - 1] = UINT64_MAX;
    memset(present, 0, sizeof(present));
    ompc_u64map_t m = {0};
    check_all(&m, "empty");
    char when[96];
    for (int s = 0; s < steps; s++) {
        size_t k = (size_t)(rng() % nkeys);
        unsigned op = (unsigned)(rng() % 100);
        snprintf(when, sizeof(when), "%s seed %u step %d", pattern, seed, s);
        if (op < 50) {
            uint64_t v = rng();
            CHECK(ompc_u64map_put(&m, universe[k], v) == OMPC_OK, "%s: put", when);
            present[k] = 1;
            val[k] = v;
        } else if (op < 95) {
            uint64_t v = ~0ull;
            bool got = ompc_u64map_remove(&m, universe[k], &v);
            CHECK(got == (bool)present[k], "%s: remove said %d", when, got);
            CHECK(!got || v == val[k], "%s: remove gave the wrong value", when);
            present[k] = 0;
        } else if (op < 99) {
            size_t calls = 0, want = 0, kept = 0;
            for (size_t j = 0; j < nkeys; j++)
                if (present[j]) {
                    want += val[j] & 1;
                    kept += !(val[j] & 1);
                }
            size_t got = ompc_u64map_remove_if(&m, drop_odd_val, &calls);
            CHECK(got == want, "%s: remove_if removed %zu, expected %zu", when, got,
                  want);
            CHECK(calls >= want + kept, "%s: remove_if looked at %zu keys of %zu", when,
                  calls, want + kept);
            for (size_t j = 0; j < nkeys; j++)
                if (val[j] & 1)
                    present[j] = 0;
        } else {
            ompc_u64map_fini(&m);
            memset(present, 0, sizeof(present));
        }
        /* A full check is O(universe); every step for small runs. */
        if (nkeys <= 64 || s % 97 == 0 || s == steps - 1)
            check_all(&m, when);
    }
    ompc_u64map_fini(&m);
    memset(present, 0, sizeof(present));
    check_all(&m, "after fini");
}

int main(void)
{
    static const char *const patterns[] = {"dense", "stride32", "stride4k", "random"};
    for (size_t p = 0; p < sizeof(patterns) / sizeof(*patterns); p++) {
        for (unsigned seed = 1; seed <= 20; seed++)
            run(patterns[p], seed, 40, 4000);
        for (unsigned seed = 1; seed <= 3; seed++)
            run(patterns[p], seed, UNIVERSE, 60000);
    }
    /* Growth from empty to many keys and back, with values as pointers. */
    ompc_u64map_t m = {0};
    for (uint64_t k = 0; k < 100000; k++)
        CHECK(ompc_u64map_put(&m, k * 8, (uint64_t)(uintptr_t)&m + k) == OMPC_OK, "grow");
    CHECK(ompc_u64map_size(&m) == 100000, "size %zu", ompc_u64map_size(&m));
    for (uint64_t k = 0; k < 100000; k += 2)
        CHECK(ompc_u64map_remove(&m, k * 8, NULL), "remove %" PRIu64, k);
    for (uint64_t k = 0; k < 100000; k++) {
        uint64_t v;
        bool got = ompc_u64map_get(&m, k * 8, &v);
        CHECK(got == (k % 2 == 1) && (!got || v == (uint64_t)(uintptr_t)&m + k),
              "key %" PRIu64, k * 8);
    }
    ompc_u64map_fini(&m);
    printf("u64map_test: ok\n");
    return 0;
}
