"""Graph-to-graph passes: batching (vmap), differentiation (jvp, transpose), functionalization, simplify.

Every pass is pure: it reads a `Graph` and builds a new one.

- `batching`: vmap, via each primitive's batching rule.
- `jvp`: forward mode with symbolic zero tangents.
- `partial_eval`: split a graph into known and unknown parts; `linearize` = jvp + that split.
- `transpose`: the transpose of a linear graph.
- `reverse`: reverse mode in one pipeline, linearize + transpose + simplify + prune (`vjp`, `grad_graph`).
- `simplify`: DCE, CSE, constant folding, algebraic identities (run after AD).
"""
