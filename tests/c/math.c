/* polyc test program: the math functions of the subset, in `double` and `float`. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define N 40

static void kernel_math(int n, double A[N], double B[N], float F[N], int I[N])
{
  int i;
#pragma scop
  for (i = 0; i < n; i++) {
    A[i] = sqrt(B[i]) + exp(-B[i]) + pow(B[i], 1.5) + fabs(B[i] - 10.0);
    B[i] = floor(A[i] * 3.0) + fmax(A[i], 2.5) + fmin(B[i], 1.0) + log(B[i] + 1.0) + tanh(A[i]);
    F[i] = sqrtf(F[i]) + expf(-F[i]) + powf(F[i], 0.5f) + fabsf(F[i] - 2.0f) + floorf(F[i])
           + fmaxf(F[i], 1.0f) + fminf(F[i], 3.0f) + logf(F[i] + 1.0f) + tanhf(F[i]);
    I[i] = abs(I[i] - 20);
  }
#pragma endscop
}

int main(void)
{
  static double A[N], B[N];
  static float F[N];
  static int I[N];
  int i;
  for (i = 0; i < N; i++) {
    A[i] = 0.0;
    B[i] = i * 0.75;
    F[i] = i * 0.125f;
    I[i] = i;
  }
  kernel_math(N, A, B, F, I);
  for (i = 0; i < N; i++)
    printf("%.17g %.17g %.9g %d\n", A[i], B[i], F[i], I[i]);
  return 0;
}
