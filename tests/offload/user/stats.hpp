// A summary statistic combined by a user-defined reduction.
#pragma once

struct Stats {
  double sum;
  double lo;
  double hi;
  long count;
};

#pragma omp declare target
inline Stats stats_merge(Stats a, const Stats &b)
{
  a.sum += b.sum;
  a.lo = b.lo < a.lo ? b.lo : a.lo;
  a.hi = b.hi > a.hi ? b.hi : a.hi;
  a.count += b.count;
  return a;
}
#pragma omp end declare target

#pragma omp declare reduction(merge:Stats : omp_out = stats_merge(omp_out, omp_in))            \
    initializer(omp_priv = Stats{0.0, 1e300, -1e300, 0})
