/* polyc test program: arrays as C99 variable-length parameters, whose extents are the
 * function's parameters. */
#include <stdio.h>

static void kernel_vla(int n, int m, double A[n][m], double x[m], double y[n])
{
  int i, j;
#pragma scop
  for (i = 0; i < n; i++) {
    y[i] = 0.0;
    for (j = 0; j < m; j++)
      y[i] = y[i] + A[i][j] * x[j];
  }
  for (j = 0; j < m; j++)
    for (i = 0; i < n; i++)
      A[i][j] = A[i][j] - y[i] * x[j];
#pragma endscop
}

int main(void)
{
  enum { N = 30, M = 36 };
  static double A[N][M], x[M], y[N];
  int i, j;
  for (j = 0; j < M; j++)
    x[j] = 1.0 + j / (double)M;
  for (i = 0; i < N; i++)
    for (j = 0; j < M; j++)
      A[i][j] = (double)((i + j) % 9) / 9.0;
  kernel_vla(N, M, A, x, y);
  for (i = 0; i < N; i++) {
    printf("%.17g\n", y[i]);
    for (j = 0; j < M; j++)
      printf("%.17g\n", A[i][j]);
  }
  return 0;
}
