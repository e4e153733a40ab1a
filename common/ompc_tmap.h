/* Intrusive ordered map keyed by address (a treap): O(log n) insert, erase
 * and predecessor search.  Embed an ompc_tmap_node_t in the element; the map
 * never allocates.  Not thread-safe: the owner locks. */
#ifndef OMPC_TMAP_H
#define OMPC_TMAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct ompc_tmap_node {
    uintptr_t key;
    uint32_t prio;
    struct ompc_tmap_node *left, *right;
} ompc_tmap_node_t;

typedef struct ompc_tmap {
    ompc_tmap_node_t *root;
} ompc_tmap_t;

/* Insert n with key n->key (caller sets it); keys must be unique. */
void ompc_tmap_insert(ompc_tmap_t *m, ompc_tmap_node_t *n);
/* Remove and return the node with exactly this key, or NULL. */
ompc_tmap_node_t *ompc_tmap_erase(ompc_tmap_t *m, uintptr_t key);
/* Node with exactly this key, or NULL: stops where it finds it (a floor
 * search always walks down to a leaf). */
ompc_tmap_node_t *ompc_tmap_find(const ompc_tmap_t *m, uintptr_t key);
/* Node with the largest key <= key, or NULL. */
ompc_tmap_node_t *ompc_tmap_floor(const ompc_tmap_t *m, uintptr_t key);
/* Node with the smallest key >= key, or NULL. */
ompc_tmap_node_t *ompc_tmap_ceil(const ompc_tmap_t *m, uintptr_t key);
/* Detach every node, calling fn on each (in no particular order). */
void ompc_tmap_drain(ompc_tmap_t *m, void (*fn)(ompc_tmap_node_t *n, void *arg),
                     void *arg);

/* The element that embeds node n as member `field`. */
#define OMPC_TMAP_ENTRY(n, type, field)                                                  \
    ((type *)(void *)((char *)(n) - offsetof(type, field)))

#endif
