show
examples/polybench/lu.pk
--emit
isl
