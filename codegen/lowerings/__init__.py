"""Every primitive's lowering, grouped by family; importing this package fills
`codegen.registry.LOWERINGS`.

- `elementwise`: unary/binary math (transcendentals from `vecmath`), comparisons, select, casts;
- `layout`: index remapping (broadcast, reshape, transpose, slice, pad, concatenate, rev, take),
  iota and full;
- `reduce`: reductions, arg-reductions and index_add (kernels with their own loop nests);
- `dot`: dot_general;
- `random`: Philox draws;
- `constant`: elements stored in the graph (module globals);
- `sort`: argsort (a merge sort of positions);
- `linalg`: the dense linear-algebra primitives (LAPACKE calls);
- `control`: cond, while_loop and scan as branches and loops in the entry, tuple_get as an alias,
  the custom-rule calls inlined.
"""
from . import elementwise, layout, reduce, dot, random, constant, sort, linalg, control  # noqa: F401
