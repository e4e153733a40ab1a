/*
 * lambda_capture.cpp - host lambdas whose closure refers to host memory,
 * called in target regions: ompc refuses them by name (the kernel would
 * otherwise reach host memory through the closure's copy).
 *
 *   lambda_capture ref      captures a variable by reference ([&])
 *   lambda_capture pointer  captures a pointer by value ([=])
 *   lambda_capture this     captures `this` in a member function
 */
#include <cstdio>
#include <cstring>

struct Acc {
  long k = 7;
  long run(long *v, int n) {
    auto add = [=](int i) { v[i] += k; };
#pragma omp target map(tofrom : v[0 : n])
    for (int i = 0; i < n; i++)
      add(i);
    return v[0];
  }
};

int main(int argc, char **argv) {
  const char *what = argc > 1 ? argv[1] : "";
  long v[8] = {0};
  if (!strcmp(what, "ref")) {
    long sum = 0;
    auto add = [&](int i) { sum += v[i] + i; };
#pragma omp target map(tofrom : sum, v)
    for (int i = 0; i < 8; i++)
      add(i);
    printf("sum=%ld\n", sum);
  } else if (!strcmp(what, "pointer")) {
    long *p = v;
    auto set = [=](int i) { p[i] = 3 * i; };
#pragma omp target map(tofrom : v)
    for (int i = 0; i < 8; i++)
      set(i);
    printf("v[7]=%ld\n", v[7]);
  } else if (!strcmp(what, "this")) {
    Acc a;
    printf("v[0]=%ld\n", a.run(v, 8));
  } else {
    fprintf(stderr, "usage: lambda_capture ref|pointer|this\n");
    return 2;
  }
  return 0;
}
