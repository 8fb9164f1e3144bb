static void f(int n, double A[8][8])
{
  int i, j;
#pragma scop
  for (i = 0; i < n; i++) {
    A[i][ = ((1 + ;
    for (j = 0 j < i; j++) A[i][j] = A[j][i] +* 2;
    if (i < ) else A[0][0] = 1;
  }
#pragma endscop
}
