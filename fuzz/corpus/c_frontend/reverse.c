void f(int n, int A[10])
{
  int i;
#pragma scop
  for (i = n - 1; i >= 0; i -= 3)
    A[i] = A[i] + 1;
#pragma endscop
}
