show
examples/polybench/gemm.pk
--emit
schedule
