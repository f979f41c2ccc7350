"""Graph-to-graph passes: batching (vmap), differentiation (jvp, transpose), functionalization, simplify."""
