/* polyc test program: `?:` in values (a shortest-path relaxation and a clamp). */
#include <stdio.h>

#define N 36

static void kernel_select(int n, int path[N][N], double A[N])
{
  int i, j, k;
#pragma scop
  for (k = 0; k < n; k++)
    for (i = 0; i < n; i++)
      for (j = 0; j < n; j++)
        path[i][j] = path[i][j] < path[i][k] + path[k][j] ? path[i][j] : path[i][k] + path[k][j];
  for (i = 0; i < n; i++)
    A[i] = A[i] > 1.0 ? 1.0 : (A[i] < -1.0 ? -1.0 : A[i] * path[i][0]);
#pragma endscop
}

int main(void)
{
  static int path[N][N];
  static double A[N];
  int i, j;
  for (i = 0; i < N; i++) {
    A[i] = (i - 18) * 0.0625;
    for (j = 0; j < N; j++) {
      path[i][j] = i * j % 7 + 1;
      if ((i + j) % 13 == 0 || (i + j) % 7 == 0 || (i + j) % 11 == 0)
        path[i][j] = 999;
    }
  }
  kernel_select(N, path, A);
  for (i = 0; i < N; i++) {
    printf("%.17g\n", A[i]);
    for (j = 0; j < N; j++)
      printf("%d\n", path[i][j]);
  }
  return 0;
}
