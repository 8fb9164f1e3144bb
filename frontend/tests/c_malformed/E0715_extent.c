static void kernel(int n, double A[][100])
{
  int i, j;
#pragma scop
  for (i = 0; i < n; i++)
    for (j = 0; j < 100; j++)
      A[i][j] = 0.0;
#pragma endscop
}
