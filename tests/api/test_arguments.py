"""Arguments are never silently ignored: devices, dtypes, sizes, data (issue 11 item 4)."""
import numpy as np
import pytest

import tensorplay as tp
from tensorplay import nn


@pytest.mark.parametrize("dev", ["cuda", "cuda:0", "mps", tp.device("cuda", 1), 0, "cpu:1"])
def test_non_cpu_devices_are_errors_everywhere(dev):
    for make in (lambda: tp.zeros(2, device=dev), lambda: tp.tensor([1.0], device=dev),
                 lambda: tp.arange(3, device=dev), lambda: tp.randn(2, device=dev),
                 lambda: tp.ones(2).to(dev), lambda: nn.Linear(2, 2).to(dev)):
        with pytest.raises(RuntimeError, match="CPU only"):
            make()


def test_cuda_methods_are_errors():
    with pytest.raises(RuntimeError, match="CPU only"):
        tp.ones(2).cuda()
    with pytest.raises(RuntimeError, match="CPU only"):
        nn.Linear(1, 1).cuda()


def test_unknown_device_names_are_errors_like_torch():
    with pytest.raises(RuntimeError, match="device type at start of device string: banana"):
        tp.ones(2).to("banana")
    with pytest.raises(RuntimeError, match="banana"):
        tp.device("banana")
    with pytest.raises(TypeError, match="device"):
        tp.zeros(2, device=3.5)


@pytest.mark.parametrize("dev", [None, "cpu", "cpu:0", tp.device("cpu"), tp.device("cpu", 0)])
def test_the_cpu_is_accepted(dev):
    assert tp.zeros(2, device=dev).tolist() == [0.0, 0.0]
    assert tp.ones(2).to(dev).dtype is tp.float32
    assert tp.ones(2).device == "cpu" and tp.ones(2).device == tp.device("cpu")
    assert tp.ones(2).device.type == "cpu"


@pytest.mark.parametrize("spec, want", [
    (np.float32, tp.float32), (np.dtype("float64"), tp.float64), ("float64", tp.float64), ("double", tp.float64),
    ("long", tp.int64), ("torch.int32", tp.int32), (np.bool_, tp.bool), (float, tp.float64), (int, tp.int64),
    (bool, tp.bool), (tp.int32, tp.int32),
])
def test_dtypes_are_read_like_torch_wherever_taken(spec, want):
    assert tp.zeros(2, dtype=spec).dtype is want
    assert tp.tensor([1, 0], dtype=spec).dtype is want
    assert tp.full((2,), 1, dtype=spec).dtype is want
    if not isinstance(spec, str):  # to('float64') reads a device name, as in torch
        assert tp.ones(2).to(spec).dtype is want
    assert tp.ones(2).to("cpu", spec).dtype is want
    if not want.is_bool:
        assert tp.ones(2).sum(dtype=spec).dtype is want
    assert tp.zeros_like(tp.ones(2), dtype=spec).dtype is want
    assert tp.arange(3, dtype=spec).dtype is want
    if want.is_floating_point:
        assert tp.randn(2, dtype=spec).dtype is want
        assert tp.softmax(tp.ones(2), 0, dtype=spec).dtype is want


def test_bad_dtypes_name_the_op():
    with pytest.raises(TypeError, match="zeros: unknown dtype name 'flaot32'"):
        tp.zeros(2, dtype="flaot32")
    with pytest.raises(TypeError, match="zeros: numpy dtype uint8 has no tensorplay counterpart"):
        tp.zeros(2, dtype=np.uint8)
    with pytest.raises(TypeError, match="ones: dtype must be"):
        tp.ones(2, dtype=object())


def test_to_reads_torchs_overloads():
    x = tp.tensor([1.5, 2.5])
    assert x.to(tp.zeros(1, dtype=tp.int64)).tolist() == [1, 2]
    assert x.to(dtype=tp.float64).dtype is tp.float64
    assert x.to("cpu") is x and x.to(tp.float32) is x
    y = x.to(tp.float32, copy=True)
    assert y is not x and y.tolist() == x.tolist()
    y[0] = 9.0
    assert x[0].item() == 1.5
    with pytest.raises(TypeError, match="unexpected keyword"):
        x.to(dtyp=tp.float64)


@pytest.mark.parametrize("make, op", [
    (lambda: tp.zeros(2 ** 62, 4), "zeros"), (lambda: tp.ones(2 ** 31, 2 ** 31), "ones"),
    (lambda: tp.randn(2 ** 31, 2 ** 31), "randn"), (lambda: tp.arange(2 ** 62), "arange"),
    (lambda: tp.full((2 ** 40, 2 ** 40), 1.0), "full"), (lambda: tp.eye(2 ** 32), "eye"),
    (lambda: tp.linspace(0, 1, 2 ** 62), "linspace"),
])
def test_impossible_sizes_name_the_op_and_the_size(make, op):
    with pytest.raises(ValueError, match=rf"{op}: size \[.*\] .* too large"):
        make()


def test_impossible_sizes_are_caught_at_trace_time_too():
    with pytest.raises(ValueError, match="zeros: size"):
        tp.compile(lambda x: x + tp.zeros(2 ** 62, 4).sum())(tp.ones(1))


@pytest.mark.parametrize("data", [["a"], [1, "a"], "abc", None, [{1: 2}], [[1.0], [object()]]])
def test_tensor_of_non_numbers_is_a_clear_type_error(data):
    with pytest.raises(TypeError, match="tensor: could not infer a dtype for an element of type"):
        tp.tensor(data)


def test_requires_grad_is_never_silently_dropped():
    for make in (lambda: tp.zeros(2, requires_grad=True), lambda: tp.tensor([1.0], requires_grad=True),
                 lambda: tp.linspace(0, 1, 3, requires_grad=True), lambda: tp.randn(2, requires_grad=True),
                 lambda: tp.full_like(tp.ones(2), 3.0, requires_grad=True)):
        t = make()
        assert t.requires_grad and t.is_leaf
    assert not tp.linspace(0, 1, 3, requires_grad=False).requires_grad
    with pytest.raises(RuntimeError, match="floating point"):  # torch: only float tensors require grad
        tp.arange(3, requires_grad=True)


def test_generator_argument_is_used():
    a = tp.randn(4, generator=tp.Generator().manual_seed(3))
    b = tp.randn(4, generator=tp.Generator().manual_seed(3))
    c = tp.randn(4, generator=tp.Generator().manual_seed(4))
    assert a.tolist() == b.tolist() and a.tolist() != c.tolist()
    tp.manual_seed(0)
    before = tp.random.get_rng_state()
    tp.rand(3, generator=tp.Generator())
    assert tp.random.get_rng_state() == before  # the global generator was not consumed
    with pytest.raises(TypeError, match="generator must be a tensorplay.Generator"):
        tp.rand(2, generator=np.random.default_rng())


@pytest.mark.parametrize("make", [
    lambda d: nn.Linear(2, 2, device=d), lambda d: nn.Conv2d(1, 1, 3, device=d), lambda d: nn.Embedding(3, 2, device=d),
    lambda d: nn.LayerNorm(3, device=d), lambda d: nn.BatchNorm1d(3, device=d), lambda d: nn.GroupNorm(1, 2, device=d),
    lambda d: nn.MultiheadAttention(4, 2, device=d), lambda d: nn.Bilinear(2, 2, 2, device=d),
])
def test_module_device_arguments_are_checked(make):
    with pytest.raises(RuntimeError, match="CPU only"):
        make("cuda")
    assert make(tp.device("cpu")) is not None


@pytest.mark.parametrize("init", ["uniform_", "normal_", "trunc_normal_", "xavier_uniform_", "xavier_normal_",
                                  "kaiming_uniform_", "kaiming_normal_", "orthogonal_"])
def test_init_generator_argument_is_used(init):
    def draw(seed):
        w = tp.empty(3, 4)
        getattr(nn.init, init)(w, generator=tp.Generator().manual_seed(seed))
        return w.tolist()

    assert draw(3) == draw(3) and draw(3) != draw(4)
