void f(int n, int m, double A[8][8], int idx[8])
{
  int i, j;
#pragma scop
  for (i = 0; i < n * m; i++)
    for (j = 0; j < idx[i]; j++)
      if (i * j < n)
        A[idx[i]][i * i] = A[i / n][j % m];
#pragma endscop
}
