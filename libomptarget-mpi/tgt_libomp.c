/* Where this library stands in for libomp's own entry points (tgt_taskred.c,
 * tgt_split.c), the real ones are found here: a leaf of the library's call
 * graph, so both may use it. */
#define _GNU_SOURCE
#include "tgt_internal.h"

#include <dlfcn.h>

void *tgt_libomp_next(const char *name)
{
    void *f = dlvsym(RTLD_NEXT, name, "VERSION");
    if (!f)
        f = dlsym(RTLD_NEXT, name);
    if (!f)
        ompc_fatal("libomp's %s not found after libomptarget", name);
    return f;
}
