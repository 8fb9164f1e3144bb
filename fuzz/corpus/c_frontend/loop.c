void f(int n, double A[100])
{
  int i;
#pragma scop
  for (i = 0; i < n; i++)
    A[i] = A[i] * 2.0;
#pragma endscop
}
