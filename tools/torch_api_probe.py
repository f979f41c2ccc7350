"""How much of the PyTorch surface that real programs use tensorplay has: the torch API probe.

The probe lists common PyTorch APIs (`apis()`): every ``torch.*`` name, ``Tensor``/``Module``/
``Optimizer`` attribute that a corpus of PyTorch tutorials and example programs uses
(`USAGE`, counted by `scan_corpus`), plus the APIs the torch.func tutorials and issue 16 name
(`EXTRA`). Each API is looked up in tensorplay under the same path (``torch.nn.Linear`` ->
``tp.nn.Linear``, ``Tensor.view`` -> ``tp.Tensor.view``); when it exists, its parameter names
are compared with torch's (from `inspect.signature`, or the signature line of torch's
docstring for builtins). An API weighs ``1 + log2(1 + uses)``, so an API the corpus uses 100
times counts about 7.7 times one it never uses. Without torch installed the probe still
reports which APIs exist; it needs torch for the signature comparison.

The corpus behind `USAGE`: 157 files that mention torch in pytorch/examples, pytorch/functorch
(notebooks), yunjey/pytorch-tutorial, MorvanZhou/PyTorch-Tutorial and karpathy/nanoGPT.
Namespaces outside the library's scope (distributed, CUDA/accelerator specifics, jit/fx/onnx,
profiling, tensorboard) are left out. ``python -m tensorplay.tools.torch_api_probe --scan DIR``
recounts a corpus and prints the table.

>>> report = probe(["torch.sin", "Tensor.view", "torch.nn.Linear"])
>>> report.found, report.total
(3, 3)
>>> round(report.weighted, 3)
1.0
"""
from __future__ import annotations

import argparse
import ast
import importlib
import inspect
import json
import math
import os
import re
import sys
from collections import Counter
from dataclasses import dataclass, field

__all__ = ["USAGE", "EXTRA", "Report", "apis", "weight", "probe", "scan_corpus", "main"]

# Uses per API in the corpus (regenerate with --scan DIR).
USAGE: dict[str, int] = {
    "Tensor.data": 219, "Tensor.to": 204, "Tensor.numpy": 203, "torch.nn.Linear": 192,
    "Module.parameters": 120, "torch.nn.Module": 120, "Tensor.size": 118, "Optimizer.step": 112,
    "Tensor.item": 109, "Tensor.backward": 106, "Module.zero_grad": 93, "Tensor.view": 76,
    "torch.utils.data.DataLoader": 69, "torch.nn.ReLU": 58, "torch.optim.Adam": 58, "torch.nn.Sequential": 55,
    "torch.device": 53, "Module.state_dict": 51, "torch.autograd.Variable": 50, "torch.randn": 50,
    "Tensor.sum": 49, "torch.save": 47, "Tensor.shape": 46, "torch.manual_seed": 46, "Tensor.dim": 41,
    "Tensor.relu": 40, "torch.from_numpy": 40, "Tensor.float": 37, "torch.nn.Conv2d": 36, "torch.zeros": 36,
    "Module.eval": 34, "torch.nn.functional.relu": 34, "torch.Tensor": 33, "torch.no_grad": 33,
    "torch.FloatTensor": 32, "Module.train": 31, "Tensor.grad": 31, "Tensor.reshape": 31, "Tensor.type": 31,
    "torch.cat": 31, "torch.max": 30, "Tensor.cuda": 29, "torch.load": 29,
    "torch.accelerator.is_available": 28, "Module.load_state_dict": 26, "torch.nn.Dropout": 26,
    "torch.nn.MSELoss": 26, "Tensor.cpu": 25, "torch.optim.SGD": 25, "Tensor.mean": 24,
    "torch.nn.CrossEntropyLoss": 23, "Tensor.squeeze": 22, "Tensor.transpose": 21, "Tensor.unsqueeze": 21,
    "Tensor.detach": 20, "torch.mean": 20, "torch.ones": 20, "Tensor.max": 19, "torch.cuda.is_available": 19,
    "torch.log": 19, "torch.stack": 19, "torch.tensor": 18, "Tensor.device": 17, "torch.allclose": 17,
    "torch.nn.Embedding": 17, "torch.unsqueeze": 17, "torch.linspace": 16, "torch.LongTensor": 15,
    "torch.nn.BatchNorm2d": 15, "Module.forward": 14, "torch.nn.Tanh": 14, "Tensor.clone": 13,
    "torch.nn.MaxPool2d": 13, "Tensor.min": 12, "Tensor.pow": 12, "torch.float32": 12,
    "torch.utils.data.Dataset": 12, "Tensor.flatten": 11, "torch.nn.Parameter": 10, "torch.normal": 10,
    "torch.arange": 9, "torch.nn.LSTM": 9, "torch.nn.LeakyReLU": 9, "torch.nn.Sigmoid": 9,
    "torch.nn.functional.log_softmax": 9, "torch.nn.functional.softmax": 9, "torch.rand": 9,
    "torch.randint": 9, "Tensor.eq": 8, "Tensor.fill_": 8, "Tensor.ravel": 8, "torch.nn.LayerNorm": 8,
    "torch.nn.functional.nll_loss": 8, "torch.optim.AdamW": 8, "Tensor.norm": 7, "Tensor.t": 7, "torch.exp": 7,
    "torch.mm": 7, "torch.nn.InstanceNorm2d": 7, "torch.nn.init.normal_": 7, "torch.nn.init.zeros_": 7,
    "torch.optim.Optimizer": 7, "torch.sum": 7, "Module.apply": 6, "Module.named_parameters": 6,
    "Tensor.argmax": 6, "Tensor.contiguous": 6, "Tensor.exp": 6, "Tensor.normal_": 6, "Tensor.numel": 6,
    "torch.long": 6, "torch.multinomial": 6, "torch.nn.BatchNorm1d": 6, "torch.nn.functional.cross_entropy": 6,
    "torch.nn.init.uniform_": 6, "torch.nn.utils.clip_grad_norm_": 6, "torch.utils.data.TensorDataset": 6,
    "Module.register_buffer": 5, "Tensor.requires_grad": 5, "torch.flatten": 5, "torch.nn.ConvTranspose2d": 5,
    "torch.nn.Dropout2d": 5, "torch.nn.RNN": 5, "torch.nn.functional.max_pool2d": 5,
    "torch.nn.init.trunc_normal_": 5, "torch.optim.lr_scheduler.StepLR": 5, "torch.sin": 5,
    "Module.add_module": 4, "Tensor.copy_": 4, "Tensor.dot": 4, "Tensor.mul": 4, "Tensor.new_zeros": 4,
    "Tensor.random_": 4, "Tensor.requires_grad_": 4, "Tensor.sigmoid": 4, "Tensor.type_as": 4,
    "Tensor.view_as": 4, "torch.compile": 4, "torch.double": 4, "torch.func.jacrev": 4, "torch.func.vmap": 4,
    "torch.neg": 4, "torch.nn.BCELoss": 4, "torch.nn.init.orthogonal_": 4, "Module.children": 3, "Tensor.T": 3,
    "Tensor.dtype": 3, "Tensor.masked_fill": 3, "Tensor.select": 3, "Tensor.std": 3, "Tensor.zero_": 3,
    "torch.add": 3, "torch.bool": 3, "torch.cos": 3, "torch.diag": 3, "torch.eye": 3, "torch.float": 3,
    "torch.func.grad": 3, "torch.int64": 3, "torch.matmul": 3, "torch.nn.GELU": 3, "torch.nn.ModuleList": 3,
    "torch.nn.NLLLoss": 3, "torch.nn.functional.dropout": 3,
    "torch.nn.functional.scaled_dot_product_attention": 3, "torch.nn.init.calculate_gain": 3,
    "torch.nn.init.xavier_normal_": 3, "torch.optim.Adadelta": 3, "torch.sigmoid": 3, "torch.tanh": 3,
    "torch.topk": 3, "torch.tril": 3, "Tensor.add_": 2, "Tensor.clamp": 2, "Tensor.clip": 2, "Tensor.cos": 2,
    "Tensor.detach_": 2, "Tensor.div": 2, "Tensor.gather": 2, "Tensor.is_cuda": 2, "Tensor.long": 2,
    "Tensor.mm": 2, "Tensor.new_tensor": 2, "Tensor.permute": 2, "Tensor.scatter_": 2, "Tensor.tolist": 2,
    "torch.abs": 2, "torch.autograd.grad": 2, "torch.dot": 2, "torch.empty": 2, "torch.func.hessian": 2,
    "torch.func.jacfwd": 2, "torch.func.vjp": 2, "torch.nn.LSTMCell": 2, "torch.nn.ReflectionPad2d": 2,
    "torch.nn.Transformer": 2, "torch.nn.functional.binary_cross_entropy": 2,
    "torch.nn.functional.smooth_l1_loss": 2, "torch.nn.functional.softplus": 2, "torch.nn.functional.tanh": 2,
    "torch.nn.init.ones_": 2, "torch.nn.init.xavier_uniform_": 2, "torch.ones_like": 2,
    "torch.optim.RMSprop": 2, "torch.randn_like": 2, "torch.randperm": 2, "torch.relu": 2, "torch.tan": 2,
    "torch.view_as_complex": 2, "torch.view_as_real": 2, "torch.where": 2, "torch.arccos": 1,
    "torch.arcsin": 1, "torch.arctan": 1, "torch.bitwise_and": 1, "torch.full": 1, "torch.func.jvp": 1,
    "torch.log1p": 1, "torch.nn.AdaptiveAvgPool2d": 1, "torch.nn.AvgPool2d": 1, "torch.nn.EmbeddingBag": 1,
    "torch.nn.ModuleDict": 1, "torch.nn.MultiheadAttention": 1, "torch.nn.PReLU": 1,
    "torch.nn.PixelShuffle": 1, "torch.nn.Softmax": 1, "torch.nn.functional.elu": 1,
    "torch.nn.functional.interpolate": 1, "torch.nn.functional.layer_norm": 1, "torch.nn.functional.linear": 1,
    "torch.nn.functional.sigmoid": 1, "torch.nn.functional.silu": 1, "torch.nn.init.constant_": 1,
    "torch.nn.init.kaiming_normal_": 1, "torch.optim.LBFGS": 1, "torch.outer": 1, "torch.polar": 1,
    "torch.rsqrt": 1, "torch.set_grad_enabled": 1, "torch.sqrt": 1, "torch.triu": 1, "torch.uint8": 1,
    "torch.utils.data.Subset": 1, "torch.utils.data.random_split": 1, "torch.zeros_like": 1,
    "torch.bfloat16": 10, "torch.float16": 7, "Tensor.half": 2,
}

# APIs the corpus uses rarely or not at all but the torch.func tutorials and issue 16 name:
# (namespace, names separated by spaces). The newest primitives' names are left out:
# tests/ir/test_one_place.py checks that each is named in three files only.
EXTRA: tuple[tuple[str, str], ...] = (
    ("torch.func", (
        "vmap grad grad_and_value vjp jvp jacrev jacfwd hessian functional_call stack_module_state "
        "linearize functionalize "
    )),
    ("torch.autograd", (
        "grad backward Function "
    )),
    ("torch.autograd.functional", (
        "jacobian hessian vjp jvp hvp vhp "
    )),
    ("torch", (
        "enable_grad inference_mode is_grad_enabled vmap is_tensor numel clone detach compile sort "
        "argsort topk kthvalue msort cumsum cumprod cummax cummin logcumsumexp tril triu diag "
        "diag_embed diagflat diagonal trace clamp clamp_min clamp_max clip scatter scatter_add "
        "scatter_reduce gather index_select index_add masked_select masked_fill take take_along_dim "
        "roll searchsorted bucketize nonzero unique unique_consecutive argwhere einsum bmm baddbmm "
        "addmm addmv mv outer inner kron cross cdist norm dist std var var_mean std_mean median "
        "nanmedian quantile nanquantile nanmean nansum logsumexp softmax log_softmax prod amax amin "
        "argmax argmin min max minimum maximum fmax fmin all any isnan isinf isfinite isclose equal "
        "nan_to_num sign sgn square pow exp exp2 expm1 log2 log10 sqrt reciprocal asin acos atan "
        "atan2 sinh cosh erf erfc erfinv floor ceil round trunc frac fmod "
        "remainder lerp addcmul addcdiv logaddexp logical_and logical_or logical_not "
        "logical_xor eq ne lt le gt ge mul sub div empty_like full_like rand_like randint_like "
        "logspace as_tensor bernoulli poisson reshape squeeze permute transpose swapaxes movedim "
        "chunk split tensor_split unbind hstack vstack dstack concat narrow select flip fliplr "
        "flipud rot90 repeat_interleave tile broadcast_to broadcast_tensors meshgrid cartesian_prod "
        "tensordot block_diag cov corrcoef histc bincount count_nonzero diff Size get_default_dtype "
        "set_default_dtype seed initial_seed get_rng_state set_rng_state Generator from_dlpack "
        "float64 int32 int64 int8 int16 is_floating_point set_printoptions cumulative_trapezoid "
        "trapezoid heaviside signbit logit xlogy relu atleast_1d atleast_2d flatten unflatten t "
        "vander triu_indices tril_indices "
    )),
    ("torch.linalg", (
        "norm vector_norm matrix_norm solve inv det slogdet cholesky qr eigh eigvalsh svd svdvals "
        "lstsq pinv matrix_rank matrix_power cross multi_dot vecdot solve_triangular diagonal matmul "
    )),
    ("torch.nn", (
        "Conv1d Conv3d ConvTranspose1d MaxPool1d AvgPool1d AdaptiveAvgPool1d AdaptiveMaxPool2d "
        "GroupNorm InstanceNorm1d Identity Flatten Unflatten Softplus ELU SELU SiLU Mish Hardtanh "
        "ReLU6 LogSoftmax GLU AlphaDropout Dropout1d TransformerEncoderLayer TransformerEncoder "
        "TransformerDecoderLayer GRU GRUCell RNNCell Upsample CosineSimilarity PairwiseDistance "
        "L1Loss SmoothL1Loss HuberLoss BCEWithLogitsLoss KLDivLoss ParameterList ParameterDict "
        "ZeroPad2d Softsign Tanhshrink Threshold LogSigmoid Hardswish Hardsigmoid BatchNorm3d "
        "LayerNorm RMSNorm UpsamplingNearest2d "
    )),
    ("torch.nn.functional", (
        "gelu leaky_relu hardtanh relu6 logsigmoid mse_loss l1_loss huber_loss "
        "binary_cross_entropy_with_logits kl_div pad one_hot normalize cosine_similarity "
        "pairwise_distance avg_pool2d max_pool1d adaptive_avg_pool2d conv1d conv2d conv_transpose2d "
        "embedding batch_norm group_norm instance_norm unfold glu pixel_shuffle selu mish hardswish "
        "softmin gumbel_softmax softsign threshold dropout1d dropout2d alpha_dropout avg_pool1d "
        "max_pool2d adaptive_avg_pool1d "
    )),
    ("torch.nn.init", (
        "kaiming_uniform_ constant_ eye_ dirac_ sparse_ "
    )),
    ("torch.nn.utils", (
        "clip_grad_value_ parameters_to_vector vector_to_parameters "
    )),
    ("Module", (
        "modules named_modules named_children buffers named_buffers requires_grad_ "
        "register_parameter to cpu double float get_submodule register_forward_hook "
        "register_forward_pre_hook extra_repr "
    )),
    ("Tensor", (
        "add sub mul div matmul bmm exp log abs sqrt sin tanh softmax log_softmax var amax amin "
        "argmin prod cumsum clamp_ clip_ abs_ neg mT transpose permute expand expand_as repeat "
        "unsqueeze_ squeeze_ chunk split unbind flip roll narrow index_select scatter scatter_add "
        "masked_fill_ index_fill_ index_add_ nonzero sort argsort topk ne gt lt ge le all any isnan "
        "logical_not double int bool tolist uniform_ bernoulli_ exponential_ fill_diagonal_ "
        "retain_grad grad_fn is_leaf register_hook ndim nelement is_contiguous stride new_ones "
        "new_full new_empty masked_select diag tril triu exp_ mul_ sub_ div_ pow_ sqrt_ sum_to_size "
        "log1p sign square clamp_min clamp_max lerp addcmul_ cumprod diff unfold is_floating_point "
        "element_size "
    )),
    ("torch.utils.data", (
        "Subset ConcatDataset Sampler RandomSampler SequentialSampler BatchSampler IterableDataset "
        "WeightedRandomSampler default_collate get_worker_info "
    )),
    ("torch.optim", (
        "Adagrad Adamax NAdam RAdam "
    )),
    ("torch.optim.lr_scheduler", (
        "MultiStepLR ExponentialLR CosineAnnealingLR LambdaLR OneCycleLR ReduceLROnPlateau LinearLR "
        "CosineAnnealingWarmRestarts SequentialLR ConstantLR MultiplicativeLR "
    )),
    ("Optimizer", (
        "state_dict load_state_dict param_groups add_param_group "
    )),
    ("torch.backends.mps", (
        "is_available "
    )),
    ("torch.cuda", (
        "device_count manual_seed "
    )),
)

# torch parameters never compared: memory placement, GPU/implementation selection, deprecated
# loss arguments (names starting with "_" are private and skipped too).
_IGNORED_PARAMS = {"self", "out", "layout", "pin_memory", "memory_format", "non_blocking", "device_type",
                   "capturable", "differentiable", "foreach", "fused", "size_average", "reduce"}

# Namespaces left out of the corpus count: not in tensorplay's scope (see the module docstring).
OUT_OF_SCOPE = ("torch.distributed", "torch.multiprocessing", "torch.onnx", "torch.jit", "torch.hub", "torch.fx",
                "torch.cuda.amp", "torch.amp", "torch.nn.parallel", "torch.utils.tensorboard",
                "torch.utils.cpp_extension", "torch.profiler", "torch._", "torch.export", "torch.mps", "torch.xpu",
                "torch.utils.checkpoint", "torch.utils.data.distributed", "torch.testing", "torch.overrides",
                "torch.package", "torch.quantization", "torch.ao", "torch.sparse", "torch.compiler",
                "torch.utils.benchmark", "torch.distributions", "torch.nn.attention", "torch.backends.cudnn",
                "torch.backends.cuda", "torch.cuda.set_device", "torch.cuda.synchronize", "torch.cuda.current_device",
                "torch.cuda.memory", "torch.cuda.max_memory", "torch.cuda.empty_cache", "torch.cuda.get_device",
                "torch.cuda.is_bf16_supported", "torch.cuda.nccl", "torch.accelerator.current_accelerator",
                "torch.accelerator.device_count", "torch.accelerator.set_device_index",
                "torch.accelerator.device_index", "torch.nn.modules", "torch.version", "torch.storage",
                "torch.library", "torch.utils.hooks", "torch.nn.utils.rnn", "torch.futures", "torch.classes",
                "torch.ops", "torch.autograd.profiler", "torch.serialization", "torch.spmm", "torch.nn.DataParallel",
                "Tensor.name", "Tensor.resize", "Tensor.trace", "Tensor.to_sparse", "Tensor.is_xpu",
                "Tensor.pin_memory", "torch.nn.init.normal", "torch.nn.init.constant")


def weight(uses: int) -> float:
    """An API's weight from its number of uses in the corpus: ``1 + log2(1 + uses)``.

    >>> weight(0), weight(1), weight(3)
    (1.0, 2.0, 3.0)
    """
    return 1.0 + math.log2(1 + uses)


def apis() -> list[str]:
    """Every probed API: the corpus' (most used first), then the extra ones not already listed.

    >>> names = apis()
    >>> names[0], "torch.func.vmap" in names, len(names) == len(set(names))
    ('Tensor.data', True, True)
    """
    names = sorted(USAGE, key=lambda k: (-USAGE[k], k))
    seen = set(names)
    for namespace, names_text in EXTRA:
        for name in names_text.split():
            full = f"{namespace}.{name}"
            if full not in seen:
                seen.add(full)
                names.append(full)
    return names


_CLASS_ROOTS = {"Tensor": ("torch", "Tensor"), "Module": ("torch.nn", "Module"),
                "Optimizer": ("torch.optim", "Optimizer")}
_TP_CLASS_ROOTS = {"Tensor": ("tensorplay", "Tensor"), "Module": ("tensorplay.nn", "Module"),
                   "Optimizer": ("tensorplay.optim", "Optimizer")}
_MISSING = object()


def _lookup(path: str, root: str, class_roots: dict):
    """The object at `path` (``torch.x.y`` or ``Tensor.x``) with ``torch`` read as `root`, or _MISSING."""
    parts = path.split(".")
    if parts[0] in class_roots:
        module, cls = class_roots[parts[0]]
        try:
            obj = getattr(importlib.import_module(module), cls)
        except (ImportError, AttributeError):
            return _MISSING
        parts = parts[1:]
    else:
        try:
            obj = importlib.import_module(root)
        except ImportError:
            return _MISSING
        module_path = root
        parts = parts[1:]
    for i, name in enumerate(parts):
        try:
            obj = getattr(obj, name)
            continue
        except AttributeError:
            pass
        except Exception:  # noqa: BLE001  (lazy attributes of third-party modules may raise anything)
            return _MISSING
        if not inspect.ismodule(obj):
            return _MISSING
        try:
            obj = importlib.import_module(f"{obj.__name__}.{name}")
        except ImportError:
            return _MISSING
    return obj


def _torch(path: str):
    return _lookup(path, "torch", _CLASS_ROOTS)


def _tensorplay(path: str):
    return _lookup(path, "tensorplay", _TP_CLASS_ROOTS)


_DOC_SIGNATURE = re.compile(r"^\s*(?:[\w.]+\.)?(\w+)\((.*?)\)\s*->", re.M)


def _param_names(obj, name: str):
    """(names, variadic name or None, takes **kwargs) of a callable, or None when they cannot be read.

    Names are those a caller can pass by keyword; a ``*size`` of torch's docstring
    signatures is also a keyword (``torch.zeros(size=(2, 3))``), matched by any ``*args`` of ours.
    """
    target = obj.__init__ if inspect.isclass(obj) else obj
    if isinstance(obj, property) or not callable(target):
        return None
    try:
        sig = inspect.signature(target)
    except (TypeError, ValueError):
        sig = None
    if sig is not None and not (inspect.isclass(obj) and target is object.__init__):
        params = list(sig.parameters.values())
        names = {p.name for p in params if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}
        if names or not params or not inspect.isbuiltin(target):
            star = next((p.name for p in params if p.kind == p.VAR_POSITIONAL), None)
            return _public(names), star, any(p.kind == p.VAR_KEYWORD for p in params)
    doc = getattr(obj, "__doc__", None) or ""
    names, star = set(), None
    for fn_name, args in _DOC_SIGNATURE.findall(doc):
        if fn_name != name:
            continue
        for arg in args.split(","):
            arg = arg.split("=")[0].split(":")[0].strip()
            if arg.startswith("*") and arg[1:].isidentifier():
                star = arg[1:]
            if arg.lstrip("*").isidentifier():
                names.add(arg.lstrip("*"))
    return (_public(names), star, False) if names else None


def _public(names: set) -> set:
    return {n for n in names if n not in _IGNORED_PARAMS and not n.startswith("_")}


def _lacking(torch_params, our_params) -> list:
    """torch's keyword parameter names that tensorplay's callable cannot take."""
    names, star, _ = torch_params
    ours, our_star, our_kwargs = our_params
    if our_kwargs:
        return []
    return sorted(n for n in names - ours if not (n == star and our_star))


@dataclass
class Report:
    """What the probe found: counts, coverage (plain and weighted), and the lists behind them."""

    total: int = 0
    found: int = 0
    weight_total: float = 0.0
    weight_found: float = 0.0
    missing: list = field(default_factory=list)  # (api, uses), heaviest first
    mismatches: list = field(default_factory=list)  # (api, torch parameter names tensorplay lacks)
    compared: int = 0

    @property
    def plain(self) -> float:
        return self.found / self.total if self.total else 1.0

    @property
    def weighted(self) -> float:
        return self.weight_found / self.weight_total if self.weight_total else 1.0


def probe(names=None) -> Report:
    """Look every API of `names` (default `apis()`) up in tensorplay and compare parameter names.

    >>> r = probe(["torch.sin", "torch.no_such_function"])
    >>> r.found, r.total, [m[0] for m in r.missing]
    (1, 2, ['torch.no_such_function'])
    """
    try:
        import torch  # noqa: F401
        have_torch = True
    except ImportError:
        have_torch = False
    report = Report()
    for api in names if names is not None else apis():
        uses = USAGE.get(api, 0)
        w = weight(uses)
        report.total += 1
        report.weight_total += w
        ours = _tensorplay(api)
        if ours is _MISSING:
            report.missing.append((api, uses))
            continue
        report.found += 1
        report.weight_found += w
        if not have_torch:
            continue
        theirs = _torch(api)
        if theirs is _MISSING:
            continue
        short = api.rsplit(".", 1)[-1]
        torch_params = _param_names(theirs, short)
        our_params = _param_names(ours, short)
        if torch_params is None or our_params is None:
            continue
        report.compared += 1
        lacking = _lacking(torch_params, our_params)
        if lacking:
            report.mismatches.append((api, lacking))
    report.missing.sort(key=lambda m: (-m[1], m[0]))
    return report


def _source_of(path: str) -> str:
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    if not path.endswith(".ipynb"):
        return text
    try:
        cells = json.loads(text).get("cells", [])
    except ValueError:
        return ""
    code = []
    for cell in cells:
        if cell.get("cell_type") != "code":
            continue
        src = cell.get("source", "")
        src = "".join(src) if isinstance(src, list) else src
        code.append("\n".join(line for line in src.splitlines() if not line.lstrip().startswith(("%", "!"))))
    return "\n".join(code)


def _count_file(text: str, paths: Counter, attrs: Counter) -> None:
    """Count dotted names reached through imports (`paths`) and attributes of other objects (`attrs`)."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return
    alias = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                alias[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module:
            for a in node.names:
                alias[a.asname or a.name] = f"{node.module}.{a.name}"
    inner = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and id(node) not in inner:
            chain, n = [], node
            while isinstance(n, ast.Attribute):
                chain.append(n.attr)
                inner.add(id(n))
                n = n.value
            if isinstance(n, ast.Name) and n.id in alias:
                paths[".".join([alias[n.id], *reversed(chain)])] += 1
            else:
                attrs.update(chain)
        elif isinstance(node, ast.Name) and node.id in alias and isinstance(node.ctx, ast.Load):
            paths[alias[node.id]] += 1


def _torch_api_of(path: str):
    """The shortest prefix of a dotted ``torch.`` path that is not a module, or None."""
    parts = path.replace("functorch.experimental", "torch.func").replace("functorch", "torch.func").split(".")
    if parts[0] != "torch":
        return None
    for i in range(2, len(parts) + 1):
        obj = _torch(".".join(parts[:i]))
        if obj is _MISSING:
            return None
        if not inspect.ismodule(obj):
            return ".".join(parts[:i])
    return None


def scan_corpus(directory: str) -> Counter:
    """Uses per API in the ``.py``/``.ipynb`` files of `directory` that mention torch (needs torch).

    Names reached through an import (``nn.Linear`` after ``import torch.nn as nn``) count
    under their torch path; attributes of other objects (``x.view``) count as ``Tensor.``,
    ``Module.`` or ``Optimizer.`` attributes when that class has them, except the method
    names of Python's containers and strings, and those seen only once.
    """
    import torch

    paths, attrs = Counter(), Counter()
    for name in sorted(os.listdir(directory)):
        if not name.endswith((".py", ".ipynb")):
            continue
        text = _source_of(os.path.join(directory, name))
        if "torch" in text:
            _count_file(text, paths, attrs)
    usage = Counter()
    for path, uses in paths.items():
        api = _torch_api_of(path)
        if api is not None and not api.startswith(OUT_OF_SCOPE):
            usage[api] += uses
    python_names = set(dir(dict)) | set(dir(list)) | set(dir(str)) | set(dir(set)) | set(dir(tuple))
    for attr, uses in attrs.items():
        if attr.startswith("_") or uses < 2:
            continue
        for prefix, cls in (("Tensor", torch.Tensor), ("Module", torch.nn.Module), ("Optimizer", torch.optim.Optimizer)):
            if hasattr(cls, attr):
                if prefix == "Tensor" and attr in python_names:
                    break
                if not f"{prefix}.{attr}".startswith(OUT_OF_SCOPE):
                    usage[f"{prefix}.{attr}"] += uses
                break
    return usage


def main(argv=None) -> int:
    """Print the coverage figures (and, on request, the missing APIs and signature mismatches)."""
    parser = argparse.ArgumentParser(prog="python -m tensorplay.tools.torch_api_probe", description=__doc__.split("\n")[0])
    parser.add_argument("--missing", action="store_true", help="list the missing APIs, heaviest first")
    parser.add_argument("--mismatches", action="store_true", help="list torch parameter names tensorplay lacks")
    parser.add_argument("--scan", metavar="DIR", help="count API uses in a corpus directory and print the table")
    args = parser.parse_args(argv)
    if args.scan:
        usage = scan_corpus(args.scan)
        for api, uses in sorted(usage.items(), key=lambda kv: (-kv[1], kv[0])):
            print(f"{uses:6d}  {api}")
        return 0
    r = probe()
    print(f"APIs probed: {r.total}; present: {r.found} ({100 * r.plain:.1f} %); "
          f"weighted by use: {100 * r.weighted:.1f} %")
    print(f"signatures compared: {r.compared}; with torch parameter names missing: {len(r.mismatches)}")
    if args.missing:
        print("\nmissing (uses in the corpus):")
        for api, uses in r.missing:
            print(f"  {api} ({uses})")
    if args.mismatches:
        print("\nparameter names torch has and tensorplay lacks:")
        for api, lacking in r.mismatches:
            print(f"  {api}: {', '.join(lacking)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
