/* Not static, and the file has no main: any caller may pass overlapping arrays. */
void kernel(int n, double A[100], double B[100])
{
  int i;
#pragma scop
  for (i = 1; i < n; i++)
    A[i] = B[i - 1] * 2.0;
#pragma endscop
}
