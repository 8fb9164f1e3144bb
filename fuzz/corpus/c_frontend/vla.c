static void f(int n, int m, double A[n][m], double x[m], double y[n])
{
#pragma scop
  for (int i = 0; i < n; i++) {
    y[i] = 0;
    for (int j = 0; j < m; j++)
      y[i] = y[i] + A[i][j] * x[j];
  }
#pragma endscop
}
