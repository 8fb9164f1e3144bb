check
examples/polybench/gemm.pk
