/* A linked list whose device `next` pointers no map clause names: each
 * node is mapped on its own, the device links are written with
 * omp_target_memcpy inside use_device_ptr, and one kernel that maps only
 * the root walks the list.  Every node after the first is reached through
 * a device address nobody named, so the worker fetches its pages on
 * demand.  Then a second kernel writes every node through the links, and
 * `target update from` and a third kernel on any worker see the bytes. */
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define N 128

typedef struct node {
    struct node *next;
    long value;
    long pad[6];
} node_t;

int main(void)
{
    int dev = omp_get_default_device(), host = omp_get_initial_device();
    node_t *nodes = calloc(N, sizeof(node_t));
    node_t **dptr = calloc(N, sizeof(node_t *));
    if (!nodes || !dptr)
        return 2;
    for (int i = 0; i < N; i++) {
        nodes[i].value = 1000 + i;
        nodes[i].next = NULL;
        node_t *p = &nodes[i];
#pragma omp target enter data map(to : p[:1])
    }
    for (int i = 0; i < N; i++) {
        node_t *p = &nodes[i];
#pragma omp target data use_device_ptr(p)
        dptr[i] = p;
    }
    for (int i = 0; i + 1 < N; i++) {
        node_t *next = dptr[i + 1];
        if (omp_target_memcpy(dptr[i], &next, sizeof(next), offsetof(node_t, next), 0,
                              dev, host) != 0) {
            fprintf(stderr, "omp_target_memcpy failed at node %d\n", i);
            return 2;
        }
    }
    node_t *root = &nodes[0];
    long sum = 0, count = 0;
#pragma omp target parallel map(root[:1]) map(tofrom : sum, count) num_threads(1)
    {
        for (node_t *p = root; p; p = p->next) {
            sum += p->value;
            count++;
        }
    }
    long want = 0;
    for (int i = 0; i < N; i++)
        want += 1000 + i;
    if (count != N || sum != want) {
        fprintf(stderr, "walk: count %ld sum %ld, want %d and %ld\n", count, sum, N, want);
        return 1;
    }
    /* Writes through the links: the nodes after the root are written by
     * write faults, and later readers anywhere see the new values. */
#pragma omp target map(root[:1])
    {
        long k = 0;
        for (node_t *p = root; p; p = p->next)
            p->value = 7 * k++;
    }
    for (int i = 0; i < N; i++) {
        node_t *p = &nodes[i];
#pragma omp target update from(p[:1])
        if (p->value != 7 * i) {
            fprintf(stderr, "update from node %d: %ld, want %d\n", i, p->value, 7 * i);
            return 1;
        }
    }
    sum = 0;
    count = 0;
#pragma omp target map(root[:1]) map(tofrom : sum, count)
    for (node_t *p = root; p; p = p->next) {
        sum += p->value;
        count++;
    }
    if (count != N || sum != 7L * N * (N - 1) / 2) {
        fprintf(stderr, "second walk: count %ld sum %ld\n", count, sum);
        return 1;
    }
    for (int i = 0; i < N; i++) {
        node_t *p = &nodes[i];
#pragma omp target exit data map(from : p[:1])
        if (p->value != 7 * i) {
            fprintf(stderr, "exit data node %d: %ld\n", i, p->value);
            return 1;
        }
    }
    printf("list of %d nodes: ok\n", N);
    free(nodes);
    free(dptr);
    return 0;
}
