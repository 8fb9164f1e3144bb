compile
examples/polybench/gemm.pk
--nope
