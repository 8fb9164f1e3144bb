void f(int n, int m, float A[40][40])
{
  int i, j;
#pragma scop
  for (i = 0; i < n && i < m; i += 2)
    for (j = (i - 1 > 0 ? i - 1 : 0); j <= (n - 1 < i + 4 ? n - 1 : i + 4); j++)
      A[i][j] = A[i][j] + 1.0f;
#pragma endscop
}
