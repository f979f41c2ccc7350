"""`debug_unwrap`: inspect the tensor a transform hands to the wrapped function."""
from __future__ import annotations


def debug_unwrap(tensor, *, recurse: bool = True):
    """Return the plain tensor underlying a transform's temporary wrapper.

    Transforms here hand ordinary tensors to the function they wrap (under `vmap` a
    per-sample tensor, whose shape excludes the batch dimension), so the argument
    is returned unchanged; the entry point exists so debugging code keeps working
    if a wrapper representation is introduced.

    >>> import tensorplay as tp
    >>> from tensorplay.func import debug_unwrap, vmap
    >>> vmap(lambda x: (print(debug_unwrap(x).shape), x * 2)[1])(tp.ones(2, 3)).shape
    tensorplay.Size(3)
    tensorplay.Size(2, 3)
    """
    return tensor
