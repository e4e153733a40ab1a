/* Registry of local memory that remote events may target, in an ordered map
 * so that "is [addr, addr+size) inside one region" is a predecessor search
 * in O(log n) however many buffers a rank holds. */
#include "ev_internal.h"

#include <stdlib.h>

static ev_region_t *region_of(ompc_tmap_node_t *n)
{
    return n ? OMPC_TMAP_ENTRY(n, ev_region_t, node) : NULL;
}

ompc_status_t ev_region_insert(ev_ctx_t *ctx, uintptr_t base, size_t size, bool owned)
{
    if (size == 0 || base + size < base)
        return OMPC_ERR_INVALID;
    ev_region_t *n = calloc(1, sizeof(*n));
    if (!n)
        return OMPC_ERR_NOMEM;
    n->node.key = base;
    n->size = size;
    n->owned = owned;
    pthread_mutex_lock(&ctx->reg_mtx);
    ev_region_t *lo = region_of(ompc_tmap_floor(&ctx->regions, base));
    ev_region_t *hi = region_of(ompc_tmap_ceil(&ctx->regions, base));
    if ((lo && lo->node.key + lo->size > base) || (hi && hi->node.key < base + size)) {
        pthread_mutex_unlock(&ctx->reg_mtx);
        free(n);
        return OMPC_ERR_INVALID;
    }
    ompc_tmap_insert(&ctx->regions, &n->node);
    pthread_mutex_unlock(&ctx->reg_mtx);
    return OMPC_OK;
}

ompc_status_t ev_region_remove(ev_ctx_t *ctx, uintptr_t base, bool owned_only)
{
    pthread_mutex_lock(&ctx->reg_mtx);
    ev_region_t *f = region_of(ompc_tmap_floor(&ctx->regions, base));
    if (!f || f->node.key != base || (owned_only && !f->owned)) {
        pthread_mutex_unlock(&ctx->reg_mtx);
        return OMPC_ERR_BAD_ADDR;
    }
    ompc_tmap_erase(&ctx->regions, base);
    pthread_mutex_unlock(&ctx->reg_mtx);
    free(f);
    return OMPC_OK;
}

bool ev_region_contains(ev_ctx_t *ctx, uintptr_t addr, size_t size)
{
    if (addr + size < addr)
        return false;
    pthread_mutex_lock(&ctx->reg_mtx);
    ev_region_t *f = region_of(ompc_tmap_floor(&ctx->regions, addr));
    bool ok = f && addr + size <= f->node.key + f->size;
    pthread_mutex_unlock(&ctx->reg_mtx);
    return ok;
}

bool ev_mem_find(ev_ctx_t *ctx, const void *addr, uintptr_t *base_p, size_t *size_p)
{
    pthread_mutex_lock(&ctx->reg_mtx);
    ev_region_t *f = region_of(ompc_tmap_floor(&ctx->regions, (uintptr_t)addr));
    bool ok = f && (uintptr_t)addr < f->node.key + f->size;
    if (ok) {
        *base_p = f->node.key;
        *size_p = f->size;
    }
    pthread_mutex_unlock(&ctx->reg_mtx);
    return ok;
}

static void region_free(ompc_tmap_node_t *n, void *arg)
{
    (void)arg;
    ev_region_t *r = region_of(n);
    if (r->owned)
        free((void *)r->node.key);
    free(r);
}

void ev_region_destroy_all(ev_ctx_t *ctx)
{
    pthread_mutex_lock(&ctx->reg_mtx);
    ompc_tmap_drain(&ctx->regions, region_free, NULL);
    pthread_mutex_unlock(&ctx->reg_mtx);
}
