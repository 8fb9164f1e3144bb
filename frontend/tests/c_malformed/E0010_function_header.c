// The function around the region has a parameter list this parser cannot read (a `)` is
// missing): the error names it, not the region.
void fill(int n, double A[100] {
#pragma scop
  for (int i = 0; i < n; i++)
    A[i] = 1.0;
#pragma endscop
}
