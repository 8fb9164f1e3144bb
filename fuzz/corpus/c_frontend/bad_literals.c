static void f(int n, double A[9999999999])
{
  int i;
#pragma scop
  for (i = 0; i < 18446744073709551616; i += 0x7fffffffffffffff)
    A[i * 9223372036854775807] = 1e99999 + 0x1p3 + 'ab' + "str" + 07789;
#pragma endscop
}
