show
examples/gemm.pk
--emit
schedule
