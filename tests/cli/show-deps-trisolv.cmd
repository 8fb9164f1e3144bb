show
examples/polybench/trisolv.pk
--emit
deps
