show
examples/softmax.pk
--emit
ast
