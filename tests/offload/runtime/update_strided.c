/* Non-contiguous target update: a 2-D block m[1:2][2:3] of int m[4][6],
 * to and from the device.  (LLVM 19's own runtime copies only one element
 * per row here; the result is checked element by element.  A 1-D strided
 * section such as v[0:4:3] is not tested: clang-19 emits it as a
 * contiguous section, so no runtime can honour the stride.) */
#include <stdio.h>

int main(void)
{
    int m[4][6], v[12], fails = 0;
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 6; j++)
            m[i][j] = 10 * i + j;
    for (int i = 0; i < 12; i++)
        v[i] = i;
#pragma omp target enter data map(to : m, v)
    /* device: every element += 1000 */
#pragma omp target map(alloc : m, v)
    {
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 6; j++)
                m[i][j] += 1000;
        for (int i = 0; i < 12; i++)
            v[i] += 1000;
    }
#pragma omp target update from(m[1 : 2][2 : 3])
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 6; j++) {
            int in = i >= 1 && i < 3 && j >= 2 && j < 5;
            int want = 10 * i + j + (in ? 1000 : 0);
            if (m[i][j] != want) {
                fprintf(stderr, "FAIL from: m[%d][%d] = %d, want %d\n", i, j, m[i][j], want);
                fails++;
            }
        }
    for (int i = 0; i < 12; i++) {
        if (v[i] != i) {
            fprintf(stderr, "FAIL: v[%d] = %d was never updated, want %d\n", i,
                    v[i], i);
            fails++;
        }
    }
    /* host writes -1 everywhere, sends only the block back, device copies
     * the whole array to the host again */
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 6; j++)
            m[i][j] = -1;
#pragma omp target update to(m[1 : 2][2 : 3])
#pragma omp target exit data map(from : m) map(delete : v)
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 6; j++) {
            int in = i >= 1 && i < 3 && j >= 2 && j < 5;
            int want = in ? -1 : 10 * i + j + 1000;
            if (m[i][j] != want) {
                fprintf(stderr, "FAIL to: m[%d][%d] = %d, want %d\n", i, j, m[i][j], want);
                fails++;
            }
        }
    printf("%s update_strided (%d failures)\n", fails ? "FAIL" : "PASS", fails);
    return fails != 0;
}
