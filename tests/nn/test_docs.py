"""The runnable examples in the docstrings of tensorplay.nn, tensorplay.optim and the module utilities,
and the spec's module example run verbatim in a fresh interpreter."""
import doctest
import importlib
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MODULES = [
    "tensorplay.nn", "tensorplay.nn.parameter", "tensorplay.nn.functional", "tensorplay.nn.init",
    "tensorplay.nn.modules.module", "tensorplay.nn.modules.linear", "tensorplay.nn.modules.conv",
    "tensorplay.nn.modules.pooling", "tensorplay.nn.modules.batchnorm", "tensorplay.nn.modules.normalization",
    "tensorplay.nn.modules.dropout", "tensorplay.nn.modules.sparse", "tensorplay.nn.modules.activation",
    "tensorplay.nn.modules.flatten", "tensorplay.nn.modules.container", "tensorplay.nn.modules.loss",
    "tensorplay.optim", "tensorplay.optim.functional", "tensorplay.optim.sgd", "tensorplay.optim.adam",
    "tensorplay.func._module_utils", "tensorplay.func._debug",
    # the PyTorch surface: layers, optimizers, schedulers, data, files, devices, numpy interop, factories
    "tensorplay.nn._norm_resize", "tensorplay.nn._attention", "tensorplay.nn._functional_base",
    "tensorplay.nn._functional_extra", "tensorplay.nn.modules.instancenorm",
    "tensorplay.nn.modules.upsampling", "tensorplay.nn.modules.transformer", "tensorplay.nn.utils.clip_grad",
    "tensorplay.nn.utils.convert_parameters", "tensorplay.optim.rmsprop", "tensorplay.optim.adagrad",
    "tensorplay.optim.lr_scheduler", "tensorplay.utils.data", "tensorplay.utils.data.dataset",
    "tensorplay.utils.data.sampler", "tensorplay.utils.data.collate", "tensorplay.utils.data.dataloader",
    "tensorplay.serialization", "tensorplay._device", "tensorplay._numpy_interop", "tensorplay._pytree",
    "tensorplay.ops.creation", "tensorplay.ops.statistics",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert result.failed == 0, f"{result.failed} docstring example(s) failed in {name}"


def test_public_classes_and_functions_have_runnable_examples():
    import tensorplay.func as func
    import tensorplay.nn as nn
    import tensorplay.optim as optim

    public = [getattr(nn, n) for n in ("Module", "Linear", "Conv1d", "Conv2d", "BatchNorm1d", "BatchNorm2d",
                                       "LayerNorm", "Dropout", "Embedding", "Flatten", "ReLU", "GELU", "Softmax",
                                       "Sequential", "ModuleList", "ModuleDict", "MSELoss", "CrossEntropyLoss",
                                       "Parameter")]
    public += [optim.SGD, optim.Adam]
    public += [getattr(func, n) for n in ("functional_call", "stack_module_state", "replace_all_batch_norm_modules_",
                                          "batch_norm_without_running_stats", "debug_unwrap")]
    public += [getattr(nn.functional, n) for n in ("linear", "conv1d", "conv2d", "batch_norm", "layer_norm",
                                                   "dropout", "embedding", "gelu", "mse_loss", "cross_entropy")]
    public += [getattr(nn, n) for n in ("GroupNorm", "InstanceNorm1d", "InstanceNorm2d", "AdaptiveAvgPool1d",
                                        "AdaptiveAvgPool2d", "Upsample", "MultiheadAttention",
                                        "TransformerEncoderLayer", "TransformerEncoder", "AlphaDropout")]
    public += [getattr(nn.functional, n) for n in ("group_norm", "instance_norm", "adaptive_avg_pool1d",
                                                   "adaptive_avg_pool2d", "interpolate", "upsample",
                                                   "scaled_dot_product_attention", "alpha_dropout")]
    public += [getattr(nn.utils, n) for n in nn.utils.__all__]
    public += [optim.RMSprop, optim.Adagrad] + [getattr(optim.lr_scheduler, n) for n in optim.lr_scheduler.__all__
                                                if n != "LRScheduler"]
    import tensorplay as tp
    import tensorplay.utils.data as data

    public += [getattr(data, n) for n in data.__all__ if n != "Sampler"]
    public += [tp.save, tp.load, tp.device, tp.from_dlpack, tp.diagflat, tp.cov, tp.Tensor.uniform_,
               tp.Tensor.normal_, tp.Tensor.bernoulli_, tp.Tensor.exponential_, tp.Tensor.random_,
               tp.Tensor.fill_diagonal_]
    missing = [getattr(o, "__name__", o) for o in public if ">>>" not in (o.__doc__ or "")]
    assert not missing, f"no runnable example in the docstring of {missing}"


SPEC_SNIPPETS = {
    "jacrev_module": """
        import tensorplay as tp
        from tensorplay.func import jacrev

        model = tp.nn.Linear(3, 3)

        def f(x):
            return model(x)

        x = tp.randn(3)
        jacobian = jacrev(f)(x)
        assert jacobian.shape == (3, 3)
    """,
    "jacrev_params": """
        import tensorplay as tp
        from tensorplay.func import functional_call, jacrev

        model = tp.nn.Linear(3, 3)

        def f(params, x):
            return functional_call(model, params, (x,))

        x = tp.randn(3)
        jacobian = jacrev(f)(dict(model.named_parameters()), x)
        assert jacobian["weight"].shape == (3, 3, 3)
        assert jacobian["bias"].shape == (3, 3)
    """,
    "ensemble": """
        import tensorplay as tp
        import tensorplay.nn as nn
        from tensorplay.func import functional_call, stack_module_state, vmap

        models = [nn.Linear(3, 3) for _ in range(4)]
        stacked_params, stacked_buffers = stack_module_state(models)
        x = tp.randn(5, 3)

        def call_one(params, buffers, x):
            return functional_call(models[0], (params, buffers), (x,))

        ensemble_out = vmap(call_one, in_dims=(0, 0, None))(
            stacked_params, stacked_buffers, x
        )
        assert ensemble_out.shape == (4, 5, 3)
    """,
}


@pytest.mark.parametrize("name", sorted(SPEC_SNIPPETS))
def test_spec_module_example_in_fresh_interpreter(name):
    """As written in the spec: `import tensorplay as tp` alone must make `tp.nn` available."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(SPEC_SNIPPETS[name])], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
