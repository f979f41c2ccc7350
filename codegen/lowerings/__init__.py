"""Every primitive's lowering, grouped by family; importing this package fills
`codegen.registry.LOWERINGS`.

- `elementwise`: unary/binary math (transcendentals from `vecmath`), comparisons, select, casts;
- `layout`: index remapping (broadcast, reshape, transpose, slice, pad, concatenate, rev, take),
  iota and full;
- `reduce`: reductions, arg-reductions and index_add (kernels with their own loop nests);
- `dot`: dot_general;
- `random`: Philox draws;
- `control`: cond, while_loop and scan as branches and loops in the entry, tuple_get as an alias,
  the custom-rule calls inlined.
"""
from . import elementwise, layout, reduce, dot, random, control  # noqa: F401
