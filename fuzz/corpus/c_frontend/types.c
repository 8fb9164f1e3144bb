static void f(int n, char S[30], float F[30], double D[30], int I[30])
{
#pragma scop
  for (int i = 0; i < n; i++) {
    D[i] = F[i] * 0.1 + (S[i] + S[n - 1 - i]);
    I[i] = (int)D[i] % 7 + 'a';
    F[i] = (float)exp(D[i]) / 3.0f;
  }
#pragma endscop
}
