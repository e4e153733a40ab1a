// Usage: off_user_xs [nuclides] [lookups].  Three kernels, each checked
// against the same lookups on the host: lookups with three reductions
// (split kernels combine one: this one runs unsplit, and says why), one
// with a single sum (split where OMPC_SPLIT allows), and nowait tasks that
// change the grids through the device pointers before a last sum reads
// them again.
#include "xs.hpp"
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <omp.h>
#include <vector>

static double energy_of(int l)
{
    std::uint64_t s = 7 + (std::uint64_t)l;
    return 0.001 + (double)(xs_next(s) % 99000) / 100000.0;
}

int main(int argc, char **argv)
{
    int n_nucs = argc > 1 ? std::atoi(argv[1]) : 12;
    int lookups = argc > 2 ? std::atoi(argv[2]) : 15000;
    const int npts = 1000;
    int dev = omp_get_default_device(), host = omp_get_initial_device();
    std::vector<std::vector<GridPoint>> grids(n_nucs);
    std::vector<Nuclide> dnucs(n_nucs), hnucs(n_nucs);
    for (int i = 0; i < n_nucs; i++) {
        std::uint64_t s = 1000 + (std::uint64_t)i;
        auto &g = grids[i];
        g.resize(npts);
        for (int p = 0; p < npts; p++) {
            g[p].energy = (p + (double)(xs_next(s) % 1000) / 1000.0) / npts;
            for (double &x : g[p].xs)
                x = (double)(xs_next(s) % 10000) / 1000.0;
        }
        std::sort(g.begin(), g.end(),
                  [](const GridPoint &a, const GridPoint &b) { return a.energy < b.energy; });
        auto *d = static_cast<GridPoint *>(omp_target_alloc(npts * sizeof(GridPoint), dev));
        if (!d || omp_target_memcpy(d, g.data(), npts * sizeof(GridPoint), 0, 0, dev, host))
            return 2;
        dnucs[i] = {npts, d};
        hnucs[i] = {npts, g.data()};
    }
    auto *table = static_cast<Nuclide *>(omp_target_alloc(n_nucs * sizeof(Nuclide), dev));
    omp_target_memcpy(table, dnucs.data(), n_nucs * sizeof(Nuclide), 0, 0, dev, host);
    Material mat{(std::size_t)n_nucs, new double[n_nucs]};
    for (int i = 0; i < n_nucs; i++)
        mat.conc[i] = 0.5 + i * 0.01;
#pragma omp target enter data map(to : mat, mat.conc[:mat.n])

    double sum = 0, mx = -1;
    long high = 0;
#pragma omp target teams distribute parallel for is_device_ptr(table) map(to : mat)          \
    reduction(+ : sum, high) reduction(max : mx)
    for (int l = 0; l < lookups; l++) {
        double v = xs_macro(table, n_nucs, energy_of(l), mat.conc);
        sum += v;
        mx = v > mx ? v : mx;
        high += v > 20;
    }
    double sum1 = 0;
#pragma omp target teams distribute parallel for is_device_ptr(table) map(to : mat)          \
    reduction(+ : sum1)
    for (int l = 0; l < lookups; l++)
        sum1 += xs_macro(table, n_nucs, energy_of(l) * 0.5, mat.conc);

    double rs = 0, rm = -1, rs1 = 0;
    long rh = 0;
    for (int l = 0; l < lookups; l++) {
        double v = xs_macro(hnucs.data(), n_nucs, energy_of(l), mat.conc);
        rs += v;
        rm = v > rm ? v : rm;
        rh += v > 20;
        rs1 += xs_macro(hnucs.data(), n_nucs, energy_of(l) * 0.5, mat.conc);
    }

    for (int i = 0; i < n_nucs; i++) {
#pragma omp target nowait depend(inout : dnucs[i]) is_device_ptr(table) firstprivate(i)
        for (int p = 0; p < table[i].n; p++)
            table[i].grid[p].xs[0] *= 2;
    }
#pragma omp taskwait
    double s2 = 0;
#pragma omp target teams distribute parallel for is_device_ptr(table) reduction(+ : s2)
    for (int i = 0; i < n_nucs; i++)
        for (int p = 0; p < npts; p++)
            s2 += table[i].grid[p].xs[0];
    double r2 = 0;
    for (int i = 0; i < n_nucs; i++)
        for (int p = 0; p < npts; p++)
            r2 += 2 * grids[i][p].xs[0];

#pragma omp target exit data map(delete : mat.conc[:mat.n], mat)
    for (auto &n : dnucs)
        omp_target_free(n.grid, dev);
    omp_target_free(table, dev);
    delete[] mat.conc;
    auto near = [](double a, double b) { return std::fabs(a - b) <= 1e-9 * std::fabs(b); };
    bool ok = near(sum, rs) && mx == rm && high == rh && near(sum1, rs1) && near(s2, r2);
    std::printf("%s xs: sum %.6f (%.6f) max %.6f (%.6f) high %ld (%ld) sum1 %.6f (%.6f) "
                "s2 %.3f (%.3f)\n",
                ok ? "PASS" : "FAIL", sum, rs, mx, rm, high, rh, sum1, rs1, s2, r2);
    return ok ? 0 : 1;
}
