show
examples/trisolv.pk
--emit
deps
