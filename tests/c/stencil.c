/* polyc test program: a time-iterated stencil (two arrays) and an in-place one, whose
 * optimisation skews and tiles the time loop. */
#include <stdio.h>

#define N 64
#define T 12

static void kernel_stencil(int tsteps, int n, double A[N][N], double B[N][N], double C[N])
{
  int t, i, j;
#pragma scop
  for (t = 0; t < tsteps; t++) {
    for (i = 1; i < n - 1; i++)
      for (j = 1; j < n - 1; j++)
        B[i][j] = 0.2 * (A[i][j] + A[i][j - 1] + A[i][1 + j] + A[1 + i][j] + A[i - 1][j]);
    for (i = 1; i < n - 1; i++)
      for (j = 1; j < n - 1; j++)
        A[i][j] = 0.2 * (B[i][j] + B[i][j - 1] + B[i][1 + j] + B[1 + i][j] + B[i - 1][j]);
  }
  for (t = 0; t <= tsteps - 1; t++)
    for (i = 1; i <= n - 2; i++)
      C[i] = (C[i - 1] + C[i] + C[i + 1]) / 3.0;
#pragma endscop
}

int main(void)
{
  static double A[N][N], B[N][N], C[N];
  int i, j;
  for (i = 0; i < N; i++) {
    C[i] = (double)(i % 5);
    for (j = 0; j < N; j++) {
      A[i][j] = ((double)i * (j + 2) + 2) / N;
      B[i][j] = ((double)i * (j + 3) + 3) / N;
    }
  }
  kernel_stencil(T, N, A, B, C);
  for (i = 0; i < N; i++) {
    printf("%.17g\n", C[i]);
    for (j = 0; j < N; j++)
      printf("%.17g\n", A[i][j]);
  }
  return 0;
}
