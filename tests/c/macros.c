/* polyc test program: declarations wrapped in macros as PolyBench writes them (written for
 * this project): the element type, the array shapes and the loop bounds are macros, and
 * literals are wrapped in a macro too. */
#include <stdio.h>

#ifndef N
#define N 44
#endif
#define DATA_TYPE double
#define SCALAR_VAL(x) x
#define ARRAY_2D(var, d1, d2) var[d1][d2]
#define ARRAY_1D(var, d1) var[d1]
#define _PB_N n

static void kernel_macros(int n, DATA_TYPE ARRAY_2D(A, N, N), DATA_TYPE ARRAY_1D(b, N),
                          DATA_TYPE ARRAY_1D(x, N))
{
  int i, j;
#pragma scop
  for (i = 0; i < _PB_N; i++) {
    x[i] = b[i];
    for (j = 0; j < i; j++)
      x[i] -= A[i][j] * x[j];
    x[i] = x[i] / A[i][i];
  }
  for (i = 0; i < _PB_N; i++)
    b[i] = SCALAR_VAL(0.5) * x[i];
#pragma endscop
}

int main(void)
{
  static DATA_TYPE A[N][N], b[N], x[N];
  int i, j;
  for (i = 0; i < N; i++) {
    b[i] = i;
    for (j = 0; j <= i; j++)
      A[i][j] = (DATA_TYPE)(i + N - j + 1) * 2 / N;
  }
  kernel_macros(N, A, b, x);
  for (i = 0; i < N; i++)
    printf("%.17g %.17g\n", x[i], b[i]);
  return 0;
}
