static void kernel_gemver(int n, double alpha, double beta, double A[400 + 0][400 + 0],
                          double u1[400 + 0], double v1[400 + 0], double x[400 + 0],
                          double y[400 + 0], double w[400 + 0])
{
  int i, j;
#pragma scop
  for (i = 0; i < n; i++)
    for (j = 0; j < n; j++)
      A[i][j] = A[i][j] + u1[i] * v1[j];
  for (i = 0; i < n; i++)
    for (j = 0; j < n; j++)
      x[i] = x[i] + beta * A[j][i] * y[j];
  for (i = 0; i < n; i++)
    for (j = 0; j < n; j++)
      w[i] = w[i] + alpha * A[i][j] * x[j];
#pragma endscop
}
