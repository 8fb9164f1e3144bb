show
examples/lu.pk
--emit
isl
