// XSBench in small: nuclide energy grids in omp_target_alloc blocks, found
// on the device only through a table of device pointers (xs_lookup.cpp),
// and a material's concentrations mapped as a struct with an attached
// pointer (xs_main.cpp).
#pragma once
#include <cstddef>
#include <cstdint>

struct GridPoint {
    double energy;
    double xs[4];
};

struct Nuclide {
    int n;
    GridPoint *grid; // a device address
};

struct Material {
    std::size_t n;
    double *conc;
};

#pragma omp declare target
std::uint64_t xs_next(std::uint64_t &seed);
double xs_macro(const Nuclide *nucs, int n_nucs, double e, const double *conc);
#pragma omp end declare target
