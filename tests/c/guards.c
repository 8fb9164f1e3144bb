/* polyc test program: `if`/`else` with affine conditions joined by `&&`, `||` and `!`,
 * equalities and disequalities, nested guards. */
#include <stdio.h>

#define N 40

static void kernel_guards(int n, double A[N][N], double B[N][N])
{
  int i, j;
#pragma scop
  for (i = 0; i < n; i++)
    for (j = 0; j < n; j++) {
      if (i == j)
        A[i][j] = 1.0;
      else if (i < j && j - i <= 3)
        A[i][j] = B[i][j] + A[i][j - 1];
      else
        A[i][j] = 0.5 * B[j][i];
      if (!(i > 2 * j) || i + j == n - 1)
        B[i][j] = B[i][j] + A[i][j];
      if (i != 0 && j != n - 1) {
        if (i >= 3)
          B[i][j] = B[i - 1][j + 1] - B[i][j];
      }
    }
#pragma endscop
}

int main(void)
{
  static double A[N][N], B[N][N];
  int i, j;
  for (i = 0; i < N; i++)
    for (j = 0; j < N; j++) {
      A[i][j] = (double)(i * N + j) / N;
      B[i][j] = (double)((i * j) % 5) + 0.125;
    }
  kernel_guards(N, A, B);
  for (i = 0; i < N; i++)
    for (j = 0; j < N; j++)
      printf("%.17g %.17g\n", A[i][j], B[i][j]);
  return 0;
}
