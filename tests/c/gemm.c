/* polyc test program: loops with affine bounds (rectangular and triangular), `+=` and `*=`,
 * read-only scalars (`alpha`, `beta`: 0-d inputs), integer parameters (`ni`, `nj`, `nk`). */
#include <stdio.h>

#define NI 40
#define NJ 44
#define NK 48

static void init(int ni, int nj, int nk, double *alpha, double *beta, double C[NI][NJ],
                 double A[NI][NK], double B[NK][NJ])
{
  int i, j;
  *alpha = 1.5;
  *beta = 1.2;
  for (i = 0; i < ni; i++)
    for (j = 0; j < nj; j++)
      C[i][j] = (double)((i * j + 1) % ni) / ni;
  for (i = 0; i < ni; i++)
    for (j = 0; j < nk; j++)
      A[i][j] = (double)(i * (j + 1) % nk) / nk;
  for (i = 0; i < nk; i++)
    for (j = 0; j < nj; j++)
      B[i][j] = (double)(i * (j + 2) % nj) / nj;
}

static void kernel_gemm(int ni, int nj, int nk, double alpha, double beta, double C[NI][NJ],
                        double A[NI][NK], double B[NK][NJ])
{
  int i, j, k;
#pragma scop
  for (i = 0; i < ni; i++) {
    for (j = 0; j < nj; j++)
      C[i][j] *= beta;
    for (k = 0; k < nk; k++)
      for (j = 0; j < nj; j++)
        C[i][j] += alpha * A[i][k] * B[k][j];
  }
  /* A triangular update. */
  for (i = 0; i < ni; i++)
    for (j = 0; j <= i; j++)
      C[i][j] -= 0.5 * C[j][0];
#pragma endscop
}

int main(void)
{
  static double C[NI][NJ], A[NI][NK], B[NK][NJ];
  double alpha, beta;
  int i, j;
  init(NI, NJ, NK, &alpha, &beta, C, A, B);
  kernel_gemm(NI, NJ, NK, alpha, beta, C, A, B);
  for (i = 0; i < NI; i++)
    for (j = 0; j < NJ; j++)
      printf("%.17g\n", C[i][j]);
  return 0;
}
