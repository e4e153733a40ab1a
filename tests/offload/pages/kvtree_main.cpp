// A user-shaped C++ program in three files: a key/value tree that lives in
// device memory (nodes in an omp_target_alloc pool, linked by device
// pointers, values in a mapped array the nodes point into), built by one
// kernel, queried by nowait tasks that name neither the pool nor the
// values, updated in place through its pointers between rounds while
// other tasks name the values array, and read back at the end. Every
// value is checked against the host's own copy; it passes on LLVM's runtime.
#include "kvtree.hpp"
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <omp.h>
#include <vector>

int main()
{
    const std::size_t n = 4000, slices = 8, per = 500;
    const int dev = omp_get_default_device(), host = omp_get_initial_device();
    std::vector<std::int64_t> keys(n);
    std::uint64_t s = 12345;
    std::map<std::int64_t, double> ref;
    for (std::size_t i = 0; i < n; i++) {
        do {
            s = s * 6364136223846793005ULL + 1442695040888963407ULL;
            keys[i] = (std::int64_t)(s >> 40) % 1000000;
        } while (ref.count(keys[i]));
        ref[keys[i]] = keys[i] * 0.5;
    }
    kv::Pool pool{(kv::Node *)omp_target_alloc(n * sizeof(kv::Node), dev), n};
    if (!pool.base)
        return 2;
    std::vector<double> vals(n);
    for (std::size_t i = 0; i < n; i++)
        vals[i] = keys[i] * 0.5;
    double *vp = vals.data();
#pragma omp target enter data map(to : vp[0 : n])
    kv::Node *root = kv::build(pool, keys.data(), vp, n);
    std::vector<double> sums(slices);
    std::vector<std::vector<std::int64_t>> q(slices, std::vector<std::int64_t>(per));
    std::vector<std::vector<double>> res(slices, std::vector<double>(per));
    int token = 0;
    int bad = 0;
    for (int round = 0; round < 3; round++) {
        for (std::size_t sl = 0; sl < slices; sl++)
            for (std::size_t i = 0; i < per; i++)
                q[sl][i] = (i % 3 == 0) ? (std::int64_t)i * 7 + round : keys[(sl * per + i * 13) % n];
        for (std::size_t sl = 0; sl < slices; sl++)
        {
            kv::lookup_async(root, q[sl].data(), res[sl].data(), per, &token);
            kv::sum_async(vp, n, &sums[sl], &token);
        }
        const std::int64_t m = 3 + round;
        kv::scale_async(root, m, 2.0, &token);
#pragma omp taskwait
        for (std::size_t sl = 0; sl < slices; sl++)
            for (std::size_t i = 0; i < per; i++) {
                auto it = ref.find(q[sl][i]);
                double want = it == ref.end() ? -1.0 : it->second;
                if (res[sl][i] != want && bad++ < 5)
                    std::fprintf(stderr, "round %d slice %zu query %lld: got %g want %g\n", round,
                                 sl, (long long)q[sl][i], res[sl][i], want);
            }
        double want_sum = 0;
        for (auto &kvp : ref)
            want_sum += kvp.second;
        for (std::size_t sl = 0; sl < slices; sl++)
            if (sums[sl] != want_sum && bad++ < 10)
                std::fprintf(stderr, "round %d slice %zu: sum %.17g want %.17g\n", round, sl, sums[sl], want_sum);
        for (auto &kvp : ref)
            if (kvp.first % m == 0)
                kvp.second *= 2.0;
    }
    std::vector<kv::Node> back(n);
    if (omp_target_memcpy(back.data(), pool.base, n * sizeof(kv::Node), 0, 0, host, dev))
        return 2;
#pragma omp target update from(vp[0 : n])
    for (std::size_t i = 0; i < n; i++) {
        double *dv = back[i].value; // a device address: only its offset counts
        std::size_t at = (std::size_t)(dv - (double *)omp_get_mapped_ptr(vp, dev));
        if ((at >= n || vals[at] != ref[back[i].key]) && bad++ < 10)
            std::fprintf(stderr, "node %zu key %lld: value %g want %g\n", i,
                         (long long)back[i].key, at < n ? vals[at] : -2.0, ref[back[i].key]);
    }
#pragma omp target exit data map(delete : vp[0 : n])
    omp_target_free(pool.base, dev);
    std::printf("kvtree: %s (%d wrong)\n", bad ? "FAILED" : "ok", bad);
    return bad ? 1 : 0;
}
