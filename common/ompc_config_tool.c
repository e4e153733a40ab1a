/* ompc-config: prints the table of OMPC_* variables as Markdown (the README
 * table is checked against this output) or the effective values. */
#include "ompc_common.h"

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--markdown") == 0) {
        size_t n;
        const ompc_config_var_t *v = ompc_config_table(&n);
        printf("| variable | default | meaning |\n|---|---|---|\n");
        for (size_t i = 0; i < n; i++)
            printf("| `%s` | `%s` | %s |\n", v[i].name, v[i].default_value,
                   v[i].help);
        return 0;
    }
    if (argc == 1) {
        ompc_config_print();
        return 0;
    }
    fprintf(stderr, "usage: %s [--markdown]\n", argv[0]);
    return 2;
}
