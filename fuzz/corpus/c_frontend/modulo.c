void f(int n, int A[64])
{
  int i;
#pragma scop
  for (i = 0; i < n; i++)
    if (i % 4 == 0)
      A[i / 2] = A[i] % 3 + A[(2 * i + 1) / 4];
#pragma endscop
}
