compile
examples/gemm.pk
--target
cpu
--tile
32,32,32
--parallel
