show
examples/polybench/gemm.pk
--kernel
nope
