static void kernel(int n, double A[100][100], double B[100][100])
{
  int i;
#pragma scop
  for (i = 0; i < n; i++)
    B[i][0] = A[i] + 1;
#pragma endscop
}
