/* Configure-time probe (taskbench-port/CMakeLists.txt): exits 0 when the
 * CPU running the build has AVX2 and FMA, 1 otherwise. */
int main(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? 0 : 1;
}
