#include "ompc_u64map.h"

#include <stdlib.h>

#define U64MAP_MIN_CAP 16u

/* The slot where key's probe starts: Fibonacci hashing, the top bits of
 * key times 2^64 / golden ratio.  One multiply (the trace recorder looks
 * names up on every span), and the top bits depend on every key bit, so
 * sequential ids, strided addresses and keys that differ only in high
 * bits all spread. */
static size_t u64map_home(uint64_t key, size_t cap)
{
    return (size_t)((key * 0x9e3779b97f4a7c15ull) >> (64 - __builtin_ctzll(cap)));
}

/* The slot holding key, or the empty slot where it would go. */
static size_t u64map_find(const ompc_u64map_t *m, uint64_t key)
{
    size_t i = u64map_home(key, m->cap);
    while (m->used[i] && m->slot[i].key != key)
        i = (i + 1) & (m->cap - 1);
    return i;
}

bool ompc_u64map_get(const ompc_u64map_t *m, uint64_t key, uint64_t *val_p)
{
    if (m->n == 0)
        return false;
    size_t i = u64map_find(m, key);
    if (!m->used[i])
        return false;
    if (val_p)
        *val_p = m->slot[i].val;
    return true;
}

static ompc_status_t u64map_grow(ompc_u64map_t *m)
{
    size_t cap = m->cap ? 2 * m->cap : U64MAP_MIN_CAP;
    ompc_u64map_slot_t *slot = malloc(cap * sizeof(*slot));
    uint8_t *used = calloc(cap, 1);
    if (!slot || !used) {
        free(slot);
        free(used);
        return OMPC_ERR_NOMEM;
    }
    ompc_u64map_t g = {.slot = slot, .used = used, .n = m->n, .cap = cap};
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->used[i])
            continue;
        size_t j = u64map_find(&g, m->slot[i].key);
        g.used[j] = 1;
        g.slot[j] = m->slot[i];
    }
    free(m->slot);
    free(m->used);
    *m = g;
    return OMPC_OK;
}

ompc_status_t ompc_u64map_put(ompc_u64map_t *m, uint64_t key, uint64_t val)
{
    if (m->cap) {
        size_t i = u64map_find(m, key);
        if (m->used[i]) {
            m->slot[i].val = val;
            return OMPC_OK;
        }
    }
    /* At most half full: linear probing's runs stay short. */
    if (2 * (m->n + 1) > m->cap) {
        ompc_status_t st = u64map_grow(m);
        if (st != OMPC_OK)
            return st;
    }
    size_t i = u64map_find(m, key);
    m->used[i] = 1;
    m->slot[i] = (ompc_u64map_slot_t){key, val};
    m->n++;
    return OMPC_OK;
}

/* Empty slot i, then move back each later key of the run that may not
 * stay past the hole (its home is not cyclically within (hole, j]), so
 * that every key stays reachable from its home without tombstones. */
static void u64map_erase_at(ompc_u64map_t *m, size_t i)
{
    size_t mask = m->cap - 1, hole = i;
    m->used[hole] = 0;
    m->n--;
    for (size_t j = (hole + 1) & mask; m->used[j]; j = (j + 1) & mask) {
        size_t home = u64map_home(m->slot[j].key, m->cap);
        bool stays = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
        if (stays)
            continue;
        m->slot[hole] = m->slot[j];
        m->used[hole] = 1;
        m->used[j] = 0;
        hole = j;
    }
}

bool ompc_u64map_remove(ompc_u64map_t *m, uint64_t key, uint64_t *val_p)
{
    if (m->n == 0)
        return false;
    size_t i = u64map_find(m, key);
    if (!m->used[i])
        return false;
    if (val_p)
        *val_p = m->slot[i].val;
    u64map_erase_at(m, i);
    return true;
}

size_t ompc_u64map_remove_if(ompc_u64map_t *m,
                             bool (*drop)(uint64_t key, uint64_t val, void *arg),
                             void *arg)
{
    size_t removed = 0;
    /* An erase moves later keys back, into slot i itself (looked at again)
     * or, across the end of the table, to slots before i (looked at
     * already and kept, now looked at again): none is skipped. */
    for (size_t i = 0; i < m->cap;) {
        if (m->used[i] && drop(m->slot[i].key, m->slot[i].val, arg)) {
            u64map_erase_at(m, i);
            removed++;
        } else {
            i++;
        }
    }
    return removed;
}

size_t ompc_u64map_size(const ompc_u64map_t *m) { return m->n; }

bool ompc_u64map_next(const ompc_u64map_t *m, size_t *pos_p, uint64_t *key_p,
                      uint64_t *val_p)
{
    for (size_t i = *pos_p; i < m->cap; i++) {
        if (!m->used[i])
            continue;
        if (key_p)
            *key_p = m->slot[i].key;
        if (val_p)
            *val_p = m->slot[i].val;
        *pos_p = i + 1;
        return true;
    }
    *pos_p = m->cap;
    return false;
}

void ompc_u64map_fini(ompc_u64map_t *m)
{
    free(m->slot);
    free(m->used);
    *m = (ompc_u64map_t){0};
}
