/* ompc-config: prints the table of OMPC_* variables as Markdown (the README
 * table is checked against this output) or the effective values. */
#include "ompc_common.h"

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static void config_usage(FILE *out)
{
    fprintf(out, "usage: ompc-config [--markdown]\n"
                 "Prints the effective value of every OMPC_* variable, or with\n"
                 "--markdown the table of variables, defaults and meanings.\n");
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"markdown", no_argument, NULL, 'm'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    bool markdown = false;
    opterr = 0; /* the message below instead of getopt's */
    int c;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 'm': markdown = true; break;
        case 'h': config_usage(stdout); return 0;
        default: /* optopt is the letter of an unknown short option */
            if (optopt)
                fprintf(stderr,
                        "ompc-config: unknown option -%c (see ompc-config --help)\n",
                        optopt);
            else
                fprintf(stderr,
                        "ompc-config: unknown option %s (see ompc-config --help)\n",
                        argv[optind - 1]);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "ompc-config: unexpected argument %s (see ompc-config --help)\n",
                argv[optind]);
        return 2;
    }
    if (markdown) {
        size_t n;
        const ompc_config_var_t *v = ompc_config_table(&n);
        printf("| variable | default | meaning |\n|---|---|---|\n");
        for (size_t i = 0; i < n; i++)
            printf("| `%s` | `%s` | %s |\n", v[i].name, v[i].default_value, v[i].help);
        return 0;
    }
    ompc_config_print();
    return 0;
}
