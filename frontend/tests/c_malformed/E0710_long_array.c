static void kernel(int n, long A[100])
{
  int i;
#pragma scop
  for (i = 0; i < n; i++)
    A[i] = i;
#pragma endscop
}
