schedule
examples/polybench/heat-3d.pk
--parallel
--emit
schedule
--no-tile
