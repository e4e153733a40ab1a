/* What the core's unit tests share: a check that counts failures instead
 * of stopping at the first, and the verdict at the end of main. */
#ifndef TB_TEST_H
#define TB_TEST_H

#include <stdio.h>

static int failures;

#define CHECK(cond, ...)                                                                 \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond);     \
            fprintf(stderr, __VA_ARGS__);                                                \
            fputc('\n', stderr);                                                         \
            failures++;                                                                  \
        }                                                                                \
    } while (0)

/* main's return value, after one line saying how it went. */
static int tb_test_verdict(const char *name)
{
    if (failures) {
        fprintf(stderr, "%s: %d failures\n", name, failures);
        return 1;
    }
    printf("%s: ok\n", name);
    return 0;
}

#endif
