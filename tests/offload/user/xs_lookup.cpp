#include "xs.hpp"

#pragma omp declare target
std::uint64_t xs_next(std::uint64_t &seed)
{
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return seed >> 11;
}

static int xs_find(const GridPoint *g, int n, double e)
{
    int lo = 0, hi = n - 1;
    while (hi - lo > 1) {
        int mid = (lo + hi) / 2;
        if (g[mid].energy > e)
            hi = mid;
        else
            lo = mid;
    }
    return lo;
}

double xs_macro(const Nuclide *nucs, int n_nucs, double e, const double *conc)
{
    double macro = 0;
    for (int i = 0; i < n_nucs; i++) {
        const GridPoint *g = nucs[i].grid;
        int k = xs_find(g, nucs[i].n, e);
        double f = (e - g[k].energy) / (g[k + 1].energy - g[k].energy);
        for (int x = 0; x < 4; x++)
            macro += conc[i] * (g[k].xs[x] + f * (g[k + 1].xs[x] - g[k].xs[x]));
    }
    return macro;
}
#pragma omp end declare target
