/* The ompc-specific user API (include/ompc.h).  Exported under the symbol
 * version OMPC_1.0 (tgt_exports.map).  Read-only views of the runtime state
 * that __tgt_register_lib sets up before main; the head calls them. */
#include "ompc.h"
#include "tgt_internal.h"

#ifndef OMPC_VERSION_STRING
#error                                                                                   \
    "OMPC_VERSION_STRING must be defined by the build (libomptarget-mpi/CMakeLists.txt)"
#endif

const char *ompc_version(void) { return OMPC_VERSION_STRING; }

int ompc_get_num_workers(void)
{
    if (!tgt_ready() || !tgt_rt->dm || tgt_rt->offload == TGT_OFFLOAD_DISABLED)
        return 0;
    return dm_num_executors(tgt_rt->dm);
}

int ompc_get_rank(void) { return tgt_ready() ? tgt_rt->rank : 0; }
