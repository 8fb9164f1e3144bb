/* polyc test program: every loop form of the subset: `<`, `<=`, `>`, `>=`, `!=` bounds,
 * `++`, `--`, `+= c`, `-= c`, `i = i + c`, minimum and maximum bounds written with `?:` and
 * with macros, and conditions joined by `&&`. */
#include <stdio.h>

#define N 50
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

static void kernel_bounds(int n, int m, double A[N][N], double x[N])
{
  int i, j;
#pragma scop
  for (i = 0; i <= n - 1; i++)
    x[i] = x[i] + 1.0;
  for (i = n - 1; i >= 0; i--)
    for (j = i; j > i - 5 && j >= 0; j--)
      A[i][j] = A[i][j] + x[j];
  for (i = 1; i != n; ++i)
    x[i] = x[i - 1] * 0.5 + x[i];
  for (i = 0; i < n; i += 3)
    for (j = MAX(0, i - 2); j < MIN(n, i + 3); j++)
      A[j][i] = A[j][i] * 2.0;
  for (i = n - 2; i > 0; i -= 4)
    x[i] = x[i + 1] - x[i];
  for (i = 0; i < m; i = i + 2)
    for (j = (i < 10 ? i : 10); j < n && j < m + 5; j++)
      A[i][j] = -A[i][j];
  for (i = 7; i >= 1; i = i - 3)
    x[i] = 2.0 * x[i];
#pragma endscop
}

int main(void)
{
  static double A[N][N], x[N];
  int i, j;
  for (i = 0; i < N; i++) {
    x[i] = i * 0.25 + 1.0;
    for (j = 0; j < N; j++)
      A[i][j] = (double)((i + 2 * j) % 7) - 3.0;
  }
  kernel_bounds(N, N - 8, A, x);
  for (i = 0; i < N; i++) {
    printf("%.17g\n", x[i]);
    for (j = 0; j < N; j++)
      printf("%.17g\n", A[i][j]);
  }
  return 0;
}
