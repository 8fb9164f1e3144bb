show
examples/gemm.pk
--kernel
nope
