static void kernel(int n, double A[100])
{
  int i;
#pragma scop
  for (i = n - 1; i < n; i--)
    A[i] = 0.0;
#pragma endscop
}
