"""Tensor operations, each a thin layer over primitives (see `ir/prims`)."""
