#include "kvtree.hpp"

namespace kv {

Node *build(const Pool &pool, const std::int64_t *keys, double *vals, std::size_t n)
{
    Node *base = pool.base;
    Node *root = nullptr;
#pragma omp target is_device_ptr(base) map(to : keys[0 : n]) map(from : root) map(present, alloc : vals[0 : n])
    {
        Node *r = nullptr;
        for (std::size_t i = 0; i < n; i++) {
            Node *fresh = &base[i];
            fresh->key = keys[i];
            fresh->value = &vals[i];
            fresh->left = fresh->right = nullptr;
            r = insert(r, fresh);
        }
        root = r;
    }
    return root;
}

void lookup_async(const Node *root, const std::int64_t *q, double *results, std::size_t n,
                  int *token)
{
#pragma omp target nowait map(to : q[0 : n]) map(from : results[0 : n]) firstprivate(root)    \
    depend(in : token[0])
#pragma omp parallel for
    for (std::size_t i = 0; i < n; i++) {
        const Node *hit = find(root, q[i]);
        results[i] = hit ? *hit->value : -1.0;
    }
}

void scale_async(Node *root, std::int64_t m, double f, int *token)
{
#pragma omp target nowait firstprivate(root, m, f) depend(inout : token[0])
    {
        // Iterative in-order walk with an explicit stack.
        Node *stack[128];
        int top = 0;
        Node *cur = root;
        while (cur || top) {
            while (cur) {
                stack[top++] = cur;
                cur = cur->left;
            }
            cur = stack[--top];
            if (cur->key % m == 0)
                *cur->value *= f;
            cur = cur->right;
        }
    }
}

void sum_async(const double *vals, std::size_t n, double *out, int *token)
{
#pragma omp target nowait map(present, to : vals[0 : n]) map(from : out[0 : 1]) depend(in : token[0])
    {
        double s = 0;
        for (std::size_t i = 0; i < n; i++)
            s += vals[i];
        out[0] = s;
    }
}

} // namespace kv
