static void kernel(int n, int A[100])
{
  int i;
#pragma scop
  for (i = 0; i < n; i++)
    A[i] = A[i] & 255;
#pragma endscop
}
