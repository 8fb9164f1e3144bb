/* polyc test program: scalars written in the region (0-d arrays), chained assignments,
 * variables declared in the region (with initialisers, and as `for` iterators), read-only
 * integer scalars used as values, and a scalar live after the region. */
#include <stdio.h>

#define N 60

static double kernel_scalars(int n, int shift, double r[N], double y[N], double z[N])
{
  int k, i;
  double alpha, beta, sum, last;
#pragma scop
  y[0] = -r[0];
  beta = 1.0;
  alpha = -r[0];
  for (k = 1; k < n; k++) {
    beta = (1 - alpha * alpha) * beta;
    sum = 0.0;
    for (i = 0; i < k; i++)
      sum += r[k - i - 1] * y[i];
    alpha = -(r[k] + sum) / beta;
    for (int j = 0; j < k; j++)
      z[j] = y[j] + alpha * y[k - j - 1];
    for (int j = 0; j < k; j++)
      y[j] = z[j];
    y[k] = alpha;
  }
  double t = shift * 0.5;
  last = sum = t + y[n - 1];
  for (i = 0; i < n; i++)
    z[i] = z[i] + shift + i * t;
#pragma endscop
  return last + sum;
}

int main(void)
{
  static double r[N], y[N], z[N];
  int i;
  for (i = 0; i < N; i++)
    r[i] = (double)(N + 1 - i) / (N * 4.0);
  double s = kernel_scalars(N, 3, r, y, z);
  printf("%.17g\n", s);
  for (i = 0; i < N; i++)
    printf("%.17g %.17g\n", y[i], z[i]);
  return 0;
}
