/* Hash map from uint64_t keys to uint64_t values (a pointer fits in one):
 * open addressing with linear probing, at most half full, deletion by
 * backward shift (no tombstones, so lookups stay short however many keys
 * come and go).  Every key is allowed.  A zeroed ompc_u64map_t is an
 * empty map; memory is taken only as it grows.  Not thread-safe: the
 * owner locks.
 *
 *     ompc_u64map_t m = {0};
 *     if (ompc_u64map_put(&m, seq, (uint64_t)(uintptr_t)task) != OMPC_OK)
 *         ... out of memory, m unchanged ...
 *     uint64_t v;
 *     if (ompc_u64map_get(&m, seq, &v)) ... found ...
 *     ompc_u64map_fini(&m);
 */
#ifndef OMPC_U64MAP_H
#define OMPC_U64MAP_H

#include "ompc_common.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ompc_u64map_slot {
    uint64_t key, val;
} ompc_u64map_slot_t;

typedef struct ompc_u64map {
    ompc_u64map_slot_t *slot; /* cap slots */
    uint8_t *used;            /* 1 where slot[i] holds a key */
    size_t n, cap;            /* keys held; cap is 0 or a power of two */
} ompc_u64map_t;

/* Whether key is in the map; its value goes to *val_p (may be NULL). */
bool ompc_u64map_get(const ompc_u64map_t *m, uint64_t key, uint64_t *val_p);
/* Set key's value, adding the key if it is new.  OMPC_ERR_NOMEM when the
 * map had to grow and could not (then it is unchanged). */
ompc_status_t ompc_u64map_put(ompc_u64map_t *m, uint64_t key, uint64_t val);
/* Remove key; false if it was not there.  Its value goes to *val_p (may be
 * NULL). */
bool ompc_u64map_remove(ompc_u64map_t *m, uint64_t key, uint64_t *val_p);
/* Remove every key for which drop(key, val, arg) is true and return how
 * many went.  drop may be called more than once for a key it keeps, so it
 * must not change state. */
size_t ompc_u64map_remove_if(ompc_u64map_t *m,
                             bool (*drop)(uint64_t key, uint64_t val, void *arg),
                             void *arg);
/* Keys held. */
size_t ompc_u64map_size(const ompc_u64map_t *m);
/* Iteration in no particular order: start with *pos_p = 0; each call that
 * returns true gives one key and value.  The map must not change meanwhile. */
bool ompc_u64map_next(const ompc_u64map_t *m, size_t *pos_p, uint64_t *key_p,
                      uint64_t *val_p);
/* Free the memory; the map is empty (and usable) afterwards. */
void ompc_u64map_fini(ompc_u64map_t *m);

#ifdef __cplusplus
}
#endif
#endif
