"""tensorplay: a PyTorch-style tensor library with composable function transforms.

Eager operations run on numpy; `tensorplay.func` transforms (vmap, grad, jvp,
jacrev, ...) trace functions into an SSA graph IR, rewrite the graph, and run
it through an llvmlite-compiled backend; `tp.compile` caches that per input
signature.

>>> import tensorplay as tp
>>> x = tp.tensor([1.0, 2.0, 3.0])
>>> (x * 2).sum()
tensor(12.)
"""
from tensorplay.ir.dtypes import DType as dtype, bool_ as bool, float16, float32, float64, int32, int64  # noqa: A001
from tensorplay.ir import dtypes as _dtypes

from ._tensor import Size, Tensor
from . import _methods  # noqa: F401  (attaches Tensor methods)
from ._trace import ClosedGraph, TracingError, trace_function
from .random import manual_seed, seed, initial_seed, get_rng_state, set_rng_state, Generator
from .ops._common import get_default_dtype, set_default_dtype, result_type, broadcast_shapes
from .compile import compile
from .ops._table import exports as _table_exports

# The op table's functions: tp.sin, tp.reshape, tp.zeros, tp.softmax, ... (tensorplay/ops/_table.py; the op
# modules that add its rows are imported by `_methods`).
globals().update(_table_exports())

from . import autograd
from .autograd import (enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled, no_grad,
                       set_grad_enabled)

# --- surface: PyTorch names beyond the op table (devices, data, files) --------------------------------
from ._device import device
from .serialization import save, load
from ._numpy_interop import from_dlpack
from ._control import cond, while_loop, fori_loop, scan
from ._legacy import FloatTensor, DoubleTensor, LongTensor, IntTensor, BoolTensor
from ._methods_extra import multinomial

from . import compiler  # noqa: F401  (tp.compiler.reset())
from . import linalg  # noqa: E402  (tp.linalg)

float = float32  # noqa: A001
double = float64
half = float16
if _dtypes.bfloat16 is not None:  # ml_dtypes is installed (the optional extra tensorplay[bfloat16])
    bfloat16 = _dtypes.bfloat16
from ._dtype_info import finfo, iinfo  # noqa: E402
long = int64
int = int32  # noqa: A001


def make_graph(fn, *example_args, **example_kwargs) -> ClosedGraph:
    """Trace `fn` on the example arguments and return its graph; ``str()`` of it is the IR text.

    >>> import tensorplay as tp
    >>> g = tp.make_graph(lambda x: tp.sin(x).sum(), tp.ones(3))
    >>> print(g)  # doctest: +NORMALIZE_WHITESPACE
    func @f(%arg0: tensor<3xf32>) -> tensor<f32> {
      %0 = tp.sin %arg0 : tensor<3xf32>
      %1 = tp.reduce_sum %0 {axes = [0]} : tensor<f32>
      return %1
    }
    """
    return trace_function(fn, example_args, example_kwargs, transform="make_graph")


__version__ = "0.1.0"


def __getattr__(name: str):
    # Subpackages load on first use (`tp.nn.Linear`, `tp.func.vmap`), keeping `import tensorplay` light.
    if name in ("nn", "optim", "func", "utils", "cuda", "backends", "accelerator"):
        import importlib

        return importlib.import_module(f".{name}", __name__)
    if name == "vmap":  # torch.vmap is torch.func.vmap
        from .func import vmap

        return vmap
    if name == "bfloat16":
        raise AttributeError(f"tensorplay.bfloat16: {_dtypes.BFLOAT16_MISSING}")
    raise AttributeError(f"module 'tensorplay' has no attribute {name!r}")
