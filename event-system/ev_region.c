/* Registry of local memory that remote events may target: a treap keyed by
 * base address, so that "is [addr, addr+size) inside one region" is a
 * predecessor search in O(log n) however many buffers a rank holds. */
#include "ev_internal.h"

#include <stdlib.h>

static uint32_t region_prio(uintptr_t base)
{
    /* A hash of the address is random enough for treap balance and keeps
     * the structure deterministic. */
    uint64_t x = (uint64_t)base * 0x9e3779b97f4a7c15ull;
    x ^= x >> 29;
    return (uint32_t)(x >> 16);
}

/* Split t into keys < base and keys >= base. */
static void region_split(ev_region_t *t, uintptr_t base, ev_region_t **l,
                         ev_region_t **r)
{
    if (!t) {
        *l = *r = NULL;
    } else if (t->base < base) {
        region_split(t->right, base, &t->right, r);
        *l = t;
    } else {
        region_split(t->left, base, l, &t->left);
        *r = t;
    }
}

static ev_region_t *region_merge(ev_region_t *l, ev_region_t *r)
{
    if (!l)
        return r;
    if (!r)
        return l;
    if (l->prio > r->prio) {
        l->right = region_merge(l->right, r);
        return l;
    }
    r->left = region_merge(l, r->left);
    return r;
}

/* Region with the largest base <= addr. */
static ev_region_t *region_floor(ev_region_t *t, uintptr_t addr)
{
    ev_region_t *best = NULL;
    while (t) {
        if (t->base <= addr) {
            best = t;
            t = t->right;
        } else {
            t = t->left;
        }
    }
    return best;
}

/* Region with the smallest base >= addr. */
static ev_region_t *region_ceil(ev_region_t *t, uintptr_t addr)
{
    ev_region_t *best = NULL;
    while (t) {
        if (t->base >= addr) {
            best = t;
            t = t->left;
        } else {
            t = t->right;
        }
    }
    return best;
}

static ev_region_t *region_insert_node(ev_region_t *t, ev_region_t *n)
{
    if (!t)
        return n;
    if (n->prio > t->prio) {
        region_split(t, n->base, &n->left, &n->right);
        return n;
    }
    if (n->base < t->base)
        t->left = region_insert_node(t->left, n);
    else
        t->right = region_insert_node(t->right, n);
    return t;
}

static ev_region_t *region_erase(ev_region_t *t, uintptr_t base, ev_region_t **out)
{
    if (!t)
        return NULL;
    if (t->base == base) {
        *out = t;
        return region_merge(t->left, t->right);
    }
    if (base < t->base)
        t->left = region_erase(t->left, base, out);
    else
        t->right = region_erase(t->right, base, out);
    return t;
}

ompc_status_t ev_region_insert(ev_ctx_t *ctx, uintptr_t base, size_t size,
                               bool owned)
{
    if (size == 0 || base + size < base)
        return OMPC_ERR_INVALID;
    ev_region_t *n = calloc(1, sizeof(*n));
    if (!n)
        return OMPC_ERR_NOMEM;
    n->base = base;
    n->size = size;
    n->owned = owned;
    n->prio = region_prio(base);
    pthread_mutex_lock(&ctx->reg_mtx);
    ev_region_t *lo = region_floor(ctx->regions, base);
    ev_region_t *hi = region_ceil(ctx->regions, base);
    if ((lo && lo->base + lo->size > base) || (hi && hi->base < base + size)) {
        pthread_mutex_unlock(&ctx->reg_mtx);
        free(n);
        return OMPC_ERR_INVALID;
    }
    ctx->regions = region_insert_node(ctx->regions, n);
    pthread_mutex_unlock(&ctx->reg_mtx);
    return OMPC_OK;
}

ompc_status_t ev_region_remove(ev_ctx_t *ctx, uintptr_t base, bool owned_only)
{
    pthread_mutex_lock(&ctx->reg_mtx);
    ev_region_t *f = region_floor(ctx->regions, base);
    if (!f || f->base != base || (owned_only && !f->owned)) {
        pthread_mutex_unlock(&ctx->reg_mtx);
        return OMPC_ERR_BAD_ADDR;
    }
    ev_region_t *out = NULL;
    ctx->regions = region_erase(ctx->regions, base, &out);
    pthread_mutex_unlock(&ctx->reg_mtx);
    free(out);
    return OMPC_OK;
}

bool ev_region_contains(ev_ctx_t *ctx, uintptr_t addr, size_t size)
{
    if (addr + size < addr)
        return false;
    pthread_mutex_lock(&ctx->reg_mtx);
    ev_region_t *f = region_floor(ctx->regions, addr);
    bool ok = f && addr + size <= f->base + f->size;
    pthread_mutex_unlock(&ctx->reg_mtx);
    return ok;
}

static void region_free_tree(ev_region_t *t)
{
    while (t) {
        region_free_tree(t->left);
        ev_region_t *r = t->right;
        if (t->owned)
            free((void *)t->base);
        free(t);
        t = r;
    }
}

void ev_region_destroy_all(ev_ctx_t *ctx)
{
    pthread_mutex_lock(&ctx->reg_mtx);
    region_free_tree(ctx->regions);
    ctx->regions = NULL;
    pthread_mutex_unlock(&ctx->reg_mtx);
}
