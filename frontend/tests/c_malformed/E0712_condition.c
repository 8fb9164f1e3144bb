static void kernel(int n, int m, double A[100])
{
  int i, j;
#pragma scop
  j = 0;
  for (i = 0; i < n || i < m; i++)
    A[i] = 0.0;
#pragma endscop
}
