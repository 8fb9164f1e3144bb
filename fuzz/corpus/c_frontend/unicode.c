/* é ∑ — comments in UTF-8 */
void f(int n, double A[8])
{
  int i;
#pragma scop
  for (i = 0; i < n; i++)
    A[i] = A[i] + 1.0; // ×2 ∂
#pragma endscop
}
