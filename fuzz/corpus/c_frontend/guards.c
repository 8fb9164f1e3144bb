void f(int n, double A[50][50])
{
  int i, j;
#pragma scop
  for (i = 0; i < n; i++)
    for (j = 0; j < n; j++)
      if (i == j || (i < j && !(j - i > 3)))
        A[i][j] = 1.0;
      else
        A[i][j] = 0.0;
#pragma endscop
}
