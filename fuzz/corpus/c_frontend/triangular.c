static void f(int n, float L[64][64], float y[64])
{
#pragma scop
  for (int i = n - 1; i >= 0; i--) {
    for (int j = i + 1; j < n; j++)
      y[i] -= L[i][j] * y[j];
    y[i] /= L[i][i];
  }
#pragma endscop
}
