#include "ompc_tmap.h"

#include <stddef.h>

static uint32_t tmap_prio(uintptr_t key)
{
    /* A hash of the key balances as well as random priorities and keeps
     * the structure deterministic run to run. */
    uint64_t x = (uint64_t)key * 0x9e3779b97f4a7c15ull;
    x ^= x >> 29;
    return (uint32_t)(x >> 16);
}

/* Split t into keys < key (l) and keys >= key (r). */
static void tmap_split(ompc_tmap_node_t *t, uintptr_t key, ompc_tmap_node_t **l,
                       ompc_tmap_node_t **r)
{
    if (!t) {
        *l = *r = NULL;
    } else if (t->key < key) {
        tmap_split(t->right, key, &t->right, r);
        *l = t;
    } else {
        tmap_split(t->left, key, l, &t->left);
        *r = t;
    }
}

static ompc_tmap_node_t *tmap_merge(ompc_tmap_node_t *l, ompc_tmap_node_t *r)
{
    if (!l)
        return r;
    if (!r)
        return l;
    if (l->prio > r->prio) {
        l->right = tmap_merge(l->right, r);
        return l;
    }
    r->left = tmap_merge(l, r->left);
    return r;
}

static ompc_tmap_node_t *tmap_insert(ompc_tmap_node_t *t, ompc_tmap_node_t *n)
{
    if (!t)
        return n;
    if (n->prio > t->prio) {
        tmap_split(t, n->key, &n->left, &n->right);
        return n;
    }
    if (n->key < t->key)
        t->left = tmap_insert(t->left, n);
    else
        t->right = tmap_insert(t->right, n);
    return t;
}

void ompc_tmap_insert(ompc_tmap_t *m, ompc_tmap_node_t *n)
{
    n->prio = tmap_prio(n->key);
    n->left = n->right = NULL;
    m->root = tmap_insert(m->root, n);
}

ompc_tmap_node_t *ompc_tmap_erase(ompc_tmap_t *m, uintptr_t key)
{
    ompc_tmap_node_t **pp = &m->root;
    while (*pp && (*pp)->key != key)
        pp = key < (*pp)->key ? &(*pp)->left : &(*pp)->right;
    ompc_tmap_node_t *n = *pp;
    if (n) {
        *pp = tmap_merge(n->left, n->right);
        n->left = n->right = NULL;
    }
    return n;
}

ompc_tmap_node_t *ompc_tmap_find(const ompc_tmap_t *m, uintptr_t key)
{
    ompc_tmap_node_t *t = m->root;
    while (t && t->key != key)
        t = t->key < key ? t->right : t->left;
    return t;
}

ompc_tmap_node_t *ompc_tmap_floor(const ompc_tmap_t *m, uintptr_t key)
{
    ompc_tmap_node_t *t = m->root, *best = NULL;
    while (t) {
        if (t->key <= key) {
            best = t;
            t = t->right;
        } else {
            t = t->left;
        }
    }
    return best;
}

ompc_tmap_node_t *ompc_tmap_ceil(const ompc_tmap_t *m, uintptr_t key)
{
    ompc_tmap_node_t *t = m->root, *best = NULL;
    while (t) {
        if (t->key >= key) {
            best = t;
            t = t->left;
        } else {
            t = t->right;
        }
    }
    return best;
}

static void tmap_drain(ompc_tmap_node_t *t, void (*fn)(ompc_tmap_node_t *n, void *arg),
                       void *arg)
{
    while (t) {
        tmap_drain(t->left, fn, arg);
        ompc_tmap_node_t *r = t->right;
        t->left = t->right = NULL;
        fn(t, arg);
        t = r;
    }
}

void ompc_tmap_drain(ompc_tmap_t *m, void (*fn)(ompc_tmap_node_t *n, void *arg),
                     void *arg)
{
    ompc_tmap_node_t *t = m->root;
    m->root = NULL;
    tmap_drain(t, fn, arg);
}
