/* fuzz_fail, shared by both drivers (fuzz.h). */
#include "fuzz.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* fuzz_driver.c points this at the real stderr when it silences fd 2
 * while inputs run. */
int fuzz_report_fd = 2;

void fuzz_fail(const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(msg, sizeof(msg) - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        n = 0;
    if ((size_t)n > sizeof(msg) - 2)
        n = (int)sizeof(msg) - 2;
    msg[n++] = '\n';
    static const char head[] = "fuzz: wrong answer: ";
    if (write(fuzz_report_fd, head, sizeof(head) - 1) < 0 ||
        write(fuzz_report_fd, msg, (size_t)n) < 0) {
        /* Nowhere left to say it; the abort still fails the run. */
    }
    abort();
}
