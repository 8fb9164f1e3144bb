static void kernel(int n, double A[100])
{
  int i;
#pragma scop
  for (i = 0; i < n; i++)
    do { A[i] = A[i] / 2.0; } while (A[i] > 1.0);
#pragma endscop
}
