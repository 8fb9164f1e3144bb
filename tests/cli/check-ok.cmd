check
examples/gemm.pk
