void f(int n, double *p, double A[8])
{
  int i = 0;
#pragma scop
  while (i < n) { A[i] = *p; i++; }
  do A[0]++; while (0);
  for (i = 0; i < n; i++) { if (A[i] > 0) break; A[i & 3] = f(i); goto out; }
#pragma endscop
out:;
}
