/* polyc test program: `float`, `int`, `char` and `long` values, C's conversions (int to
 * double, float to double, char promoted to int, double to int on assignment), casts, and
 * integer division and remainder as values. */
#include <stdio.h>

#define N 48

static void kernel_types(long n, float F[N], int I[N], char S[N], double D[N])
{
  long i;
  int j;
#pragma scop
  for (i = 0; i < n; i++) {
    F[i] = F[i] * 0.5f + I[i];
    D[i] = F[i] * 0.1 + (S[i] + S[n - 1 - i]);
    I[i] = I[i] / 3 + I[i] % 5 - (int)D[i];
    S[i] = S[i] + 1;
  }
  for (j = 1; j < n; j++) {
    F[j] += F[j - 1] / 3;
    I[j] -= I[j - 1] * 2;
    D[j] = (double)j / 7 + (float)(j * j) + (long)j;
  }
#pragma endscop
}

int main(void)
{
  static float F[N];
  static int I[N];
  static char S[N];
  static double D[N];
  int i;
  for (i = 0; i < N; i++) {
    F[i] = (float)i / 3.0f;
    I[i] = i * 37 - 500;
    S[i] = (char)('a' + i % 26);
    D[i] = 0.0;
  }
  kernel_types(N, F, I, S, D);
  for (i = 0; i < N; i++)
    printf("%.9g %d %d %.17g\n", F[i], I[i], S[i], D[i]);
  return 0;
}
