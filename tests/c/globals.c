/* polyc test program: file-scope and local arrays, several regions in one function and
 * one in `main`, and a region outside the subset left as it is. */
#include <stdio.h>

#define N 50

double G[N][N];
double h[N];

static void kernel_globals(int n)
{
  double local[N];
  int i, j;
#pragma scop
  for (i = 0; i < n; i++) {
    local[i] = 0.0;
    for (j = 0; j < n; j++)
      local[i] += G[i][j];
  }
#pragma endscop
  for (i = 0; i < n; i++)
    h[i] = local[i];
#pragma scop
  for (i = 1; i < n; i++)
    for (j = 1; j < n; j++)
      G[i][j] = G[i - 1][j] + G[i][j - 1] * 0.5 + h[j];
#pragma endscop
}

int main(void)
{
  int i, j;
  for (i = 0; i < N; i++)
    for (j = 0; j < N; j++)
      G[i][j] = (double)((i * 3 + j) % 11) / 11.0;
  kernel_globals(N);
  /* Outside the subset: a while loop. The region is kept as it is. */
#pragma scop
  i = 0;
  while (i < N) {
    h[i] = h[i] * 2.0;
    i++;
  }
#pragma endscop
#pragma scop
  for (i = 0; i < N; i++)
    h[i] = h[i] + G[i][N - 1];
#pragma endscop
  for (i = 0; i < N; i++) {
    printf("%.17g\n", h[i]);
    for (j = 0; j < N; j++)
      printf("%.17g\n", G[i][j]);
  }
  return 0;
}
