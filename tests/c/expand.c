/* polyc test program: array expansion. A local scalar assigned at the top of each
 * iteration and read only within it (one web per nest), an argument array and a local read
 * after the region, each rewritten whole by every iteration of the loops around it
 * (expanded, their final contents copied back); a scalar whose value crosses iterations and
 * a partly rewritten argument array (neither expanded). */
#include <stdio.h>

#define N 40

static double kernel_expand(int n, double A[N][N], double b[N], double x[N], double s[N],
                            double P[N][N][N], double C[N][N])
{
  double w, carried, after;
  int i, j, k, r;
  carried = 0.5;
#pragma scop
  for (i = 0; i < n; i++) {
    for (j = 0; j < i; j++) {
      w = A[i][j];
      for (k = 0; k < j; k++)
        w -= A[i][k] * A[k][j];
      A[i][j] = w / A[j][j];
    }
    for (j = i; j < n; j++) {
      w = A[i][j];
      for (k = 0; k < i; k++)
        w -= A[i][k] * A[k][j];
      A[i][j] = w;
    }
  }
  for (i = 0; i < n; i++) {
    w = b[i];
    for (j = 0; j < i; j++)
      w -= A[i][j] * x[j];
    x[i] = w;
  }
  for (r = 0; r < n; r++)
    for (i = 0; i < n; i++) {
      for (j = 0; j < n; j++) {
        s[j] = 0.0;
        for (k = 0; k < n; k++)
          s[j] += P[r][i][k] * C[k][j];
      }
      for (j = 0; j < n; j++)
        P[r][i][j] = s[j];
    }
  for (i = 0; i < n; i++) {
    b[i] = carried + b[i];
    carried = b[i] * 0.5;
  }
  for (i = 0; i < n; i++) {
    after = x[i] * 2.0;
    x[i] = after + 1.0;
  }
  for (i = 1; i < n; i++) {
    for (j = 0; j < i; j++)
      C[0][j] = A[i][j];
    for (j = 0; j < i; j++)
      C[i][j] = C[0][j] + 1.0;
  }
#pragma endscop
  return after + carried;
}

int main(void)
{
  static double A[N][N], b[N], x[N], s[N], P[N][N][N], C[N][N];
  int i, j, k;
  for (i = 0; i < N; i++) {
    b[i] = (double)(i + 1) / N;
    for (j = 0; j < N; j++) {
      A[i][j] = (double)((i * j + 1) % N) / N + (i == j ? N : 0);
      C[i][j] = (double)((i + 2 * j) % 7) / 7.0;
      for (k = 0; k < N; k++)
        P[i][j][k] = (double)((i + j * k) % 5) / 5.0;
    }
  }
  printf("%.17g\n", kernel_expand(N, A, b, x, s, P, C));
  for (i = 0; i < N; i++) {
    printf("%.17g %.17g %.17g\n", b[i], x[i], s[i]);
    for (j = 0; j < N; j++)
      printf("%.17g %.17g %.17g\n", A[i][j], C[i][j], P[i][j][i]);
  }
  return 0;
}
