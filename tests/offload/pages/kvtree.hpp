// A key/value binary search tree that lives in device memory: nodes come
// from a pool of omp_target_alloc memory and link to each other by device
// pointers, so no map clause names them.
#pragma once
#include <cstddef>
#include <cstdint>

namespace kv {

struct Node {
    std::int64_t key;
    double *value; // into the device array of values
    Node *left;
    Node *right;
};

struct Pool {
    Node *base;  // device address of the pool
    std::size_t cap;
};

#pragma omp declare target
inline Node *insert(Node *root, Node *fresh)
{
    if (!root)
        return fresh;
    Node *cur = root;
    for (;;) {
        Node **next = fresh->key < cur->key ? &cur->left : &cur->right;
        if (!*next) {
            *next = fresh;
            return root;
        }
        cur = *next;
    }
}

inline const Node *find(const Node *root, std::int64_t key)
{
    while (root && root->key != key)
        root = key < root->key ? root->left : root->right;
    return root;
}
#pragma omp end declare target

// Builds the tree from keys[0:n] in the pool (one kernel); returns the
// device address of the root.
Node *build(const Pool &pool, const std::int64_t *keys, double *vals, std::size_t n);
// Sums vals[0:n] (named, present) into *out.
void sum_async(const double *vals, std::size_t n, double *out, int *token);
// Looks up q[0:n] from task `slot`; results[i] = value or -1.
void lookup_async(const Node *root, const std::int64_t *q, double *results, std::size_t n,
                  int *token);
// Scales every value whose key is a multiple of m, walking the tree.
void scale_async(Node *root, std::int64_t m, double f, int *token);

} // namespace kv
