"""nn.RNN / LSTM / GRU and their cells against a numpy-by-hand oracle (no torch needed): outputs for every
argument combination that matters, one scan per layer and direction in the traced graph, vmap against
loop-and-stack, gradients against float64 central finite differences, and clear errors."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import tensorplay as tp
from tensorplay import nn
from tensorplay.func import functional_call, grad, vmap

from rnn_reference import as_numpy_state, cell_step, module_outputs, rand, sequence_forward

RNG = np.random.default_rng(7)
MODES = {"rnn_tanh": (nn.RNN, {}), "rnn_relu": (nn.RNN, {"nonlinearity": "relu"}), "lstm": (nn.LSTM, {}),
         "gru": (nn.GRU, {}), "lstm_proj": (nn.LSTM, {"proj_size": 2})}


def make(kind: str, **kwargs):
    cls, extra = MODES[kind]
    return cls(3, 4, dtype=tp.float64, **extra, **kwargs)


def initial_state(m, batch: int | None):
    layers = m.num_layers * (2 if m.bidirectional else 1)
    lead = (layers,) if batch is None else (layers, batch)
    h = rand(RNG, *lead, m.proj_size or m.hidden_size)
    return (h, rand(RNG, *lead, m.hidden_size)) if m.mode == "LSTM" else h


@pytest.mark.parametrize("kind", sorted(MODES))
@pytest.mark.parametrize("num_layers,bidirectional,batch_first", [(1, False, False), (2, True, False),
                                                                    (2, False, True), (1, True, True)])
@pytest.mark.parametrize("batched,with_h0", [(True, False), (True, True), (False, True), (False, False)])
def test_forward_matches_numpy(kind, num_layers, bidirectional, batch_first, batched, with_h0):
    m = make(kind, num_layers=num_layers, bidirectional=bidirectional, batch_first=batch_first)
    T, N = 5, 2
    shape = ((N, T, 3) if batch_first else (T, N, 3)) if batched else (T, 3)
    x = rand(RNG, *shape)
    hx = initial_state(m, N if batched else None) if with_h0 else None
    out, states = module_outputs(m(x, hx))
    want_out, want_states = sequence_forward(m, x.numpy(), as_numpy_state(hx))
    np.testing.assert_allclose(out, want_out, rtol=1e-10, atol=1e-12)
    assert len(states) == len(want_states)
    for s, w in zip(states, want_states):
        np.testing.assert_allclose(s, w, rtol=1e-10, atol=1e-12)


def test_bias_false_and_a_zero_length_sequence():
    m = nn.GRU(3, 4, bias=False, dtype=tp.float64)
    assert [n for n, _ in m.named_parameters()] == ["weight_ih_l0", "weight_hh_l0"]
    x = rand(RNG, 6, 2, 3)
    out, h = m(x)
    want_out, (want_h,) = sequence_forward(m, x.numpy())
    np.testing.assert_allclose(out.numpy(), want_out, rtol=1e-10)
    np.testing.assert_allclose(h.numpy(), want_h, rtol=1e-10)
    out, h = m(tp.zeros(0, 2, 3, dtype=tp.float64))
    assert out.shape == (0, 2, 4) and np.all(h.numpy() == 0)


@pytest.mark.parametrize("cls,mode,extra", [(nn.RNNCell, "RNN_TANH", {}), (nn.RNNCell, "RNN_RELU",
                                                                             {"nonlinearity": "relu"}),
                                             (nn.LSTMCell, "LSTM", {}), (nn.GRUCell, "GRU", {})])
@pytest.mark.parametrize("batched", [True, False])
def test_cells_match_numpy(cls, mode, extra, batched):
    cell = cls(3, 4, dtype=tp.float64, **extra)
    p = {k: v.numpy() for k, v in cell.named_parameters()}
    lead = (2,) if batched else ()
    x = rand(RNG, *lead, 3)
    state = tuple(rand(RNG, *lead, 4) for _ in range(2 if mode == "LSTM" else 1))
    got = cell(x, state if mode == "LSTM" else state[0])
    got = got if isinstance(got, tuple) else (got,)
    want = cell_step(mode, x.numpy(), tuple(s.numpy() for s in state), p)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), w, rtol=1e-10)
    default = cell(x)  # zero initial state
    default = default if isinstance(default, tuple) else (default,)
    zero = tuple(np.zeros_like(s.numpy()) for s in state)
    for g, w in zip(default, cell_step(mode, x.numpy(), zero, p)):
        np.testing.assert_allclose(g.numpy(), w, rtol=1e-10)


# --- structure: parameters, init, repr ------------------------------------------------------------
def test_parameter_names_shapes_and_order():
    m = nn.LSTM(3, 5, num_layers=2, bidirectional=True, proj_size=2)
    got = [(n, tuple(p.shape)) for n, p in m.named_parameters()]
    want = []
    for layer, in_size in ((0, 3), (1, 4)):
        for suffix in ("", "_reverse"):
            s = f"_l{layer}{suffix}"
            want += [("weight_ih" + s, (20, in_size)), ("weight_hh" + s, (20, 2)), ("bias_ih" + s, (20,)),
                     ("bias_hh" + s, (20,)), ("weight_hr" + s, (2, 5))]
    assert got == want
    assert [[tuple(p.shape) for p in ps] for ps in m.all_weights][1] == [s for _, s in want[5:10]]
    g = nn.GRU(3, 5, num_layers=2)
    assert tuple(g.weight_ih_l1.shape) == (15, 5) and tuple(g.weight_hh_l0.shape) == (15, 5)
    assert [n for n, _ in nn.GRUCell(3, 5).named_parameters()] == ["weight_ih", "weight_hh", "bias_ih", "bias_hh"]


def test_init_is_uniform_within_one_over_sqrt_hidden_and_follows_the_seed():
    tp.manual_seed(3)
    a = nn.LSTM(4, 16, num_layers=2)
    tp.manual_seed(3)
    b = nn.LSTM(4, 16, num_layers=2)
    bound = 1 / math.sqrt(16)
    values = np.concatenate([p.numpy().ravel() for p in a.parameters()])
    assert np.abs(values).max() <= bound and np.abs(values).max() > 0.9 * bound
    assert abs(values.mean()) < 0.02 and abs(values.std() - bound / math.sqrt(3)) < 0.02
    for p, q in zip(a.parameters(), b.parameters()):
        np.testing.assert_array_equal(p.numpy(), q.numpy())
    assert a.weight_ih_l0.dtype is tp.float32
    cell = nn.GRUCell(4, 9)
    assert all(np.abs(p.numpy()).max() <= 1 / 3 for p in cell.parameters())


def test_repr_follows_pytorch():
    assert repr(nn.LSTM(3, 4)) == "LSTM(3, 4)"
    assert repr(nn.LSTM(3, 4, 2, False, True, 0.5, True, 2)) == \
        "LSTM(3, 4, proj_size=2, num_layers=2, bias=False, batch_first=True, dropout=0.5, bidirectional=True)"
    assert repr(nn.RNN(3, 4, nonlinearity="relu")) == "RNN(3, 4)"
    assert repr(nn.RNNCell(3, 4, nonlinearity="relu")) == "RNNCell(3, 4, nonlinearity=relu)"
    assert repr(nn.GRUCell(3, 4, bias=False)) == "GRUCell(3, 4, bias=False)"


# --- the graph holds one scan per layer and direction ---------------------------------------------
def scans(graph):
    return [n for n in graph.nodes if n.prim.name == "scan"]


@pytest.mark.parametrize("kind", ["rnn_tanh", "lstm", "gru"])
def test_one_scan_per_layer_and_direction_whatever_the_length(kind):
    m = make(kind, num_layers=2, bidirectional=True)
    sizes = []
    for T in (3, 40):
        g = tp.make_graph(lambda x: m(x)[0], rand(RNG, T, 2, 3)).graph
        assert len(scans(g)) == 4
        assert [n.attrs["reverse"] for n in scans(g)] == [False, True, False, True]
        assert all(n.attrs["length"] == T for n in scans(g))
        sizes.append((len(g.nodes), sum(len(n.attrs["body"].graph.nodes) for n in scans(g))))
    assert sizes[0] == sizes[1]  # the graph does not grow with the sequence


def test_compile_runs_the_scans():
    m = make("lstm", num_layers=2)
    x = rand(RNG, 6, 2, 3)
    f = tp.compile(lambda x: m(x)[0])
    np.testing.assert_allclose(f(x).numpy(), sequence_forward(m, x.numpy())[0], rtol=1e-10)


# --- transforms -----------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["rnn_relu", "lstm", "gru"])
def test_vmap_over_a_batch_of_sequences_matches_loop_and_stack(kind):
    m = make(kind, bidirectional=True)
    xs = rand(RNG, 3, 5, 2, 3)  # 3 independent batches of (T=5, N=2) sequences
    h0 = tp.stack([tp.tensor(RNG.standard_normal((2, 2, 4))) for _ in range(3)])

    def run(x, h):
        hx = (h, tp.zeros_like(h)) if m.mode == "LSTM" else h
        return m(x, hx)[0]

    got = vmap(run)(xs, h0)
    want = tp.stack([run(xs[i], h0[i]) for i in range(3)])
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-10, atol=1e-12)
    unbatched = vmap(lambda x: m(x)[0])(rand(RNG, 4, 5, 3))  # vmap over unbatched sequences
    assert unbatched.shape == (4, 5, 8)


def central_fd(f, params: dict, name: str, eps=1e-6, picks=4):
    """d f / d params[name] at `picks` entries by float64 central differences."""
    base = params[name].numpy()
    out = {}
    for idx in list(np.ndindex(base.shape))[::max(1, base.size // picks)][:picks]:
        hi, lo = base.copy(), base.copy()
        hi[idx] += eps
        lo[idx] -= eps
        out[idx] = (f({**params, name: tp.tensor(hi)}) - f({**params, name: tp.tensor(lo)})) / (2 * eps)
    return out


@pytest.mark.parametrize("kind", ["rnn_tanh", "lstm_proj", "gru"])
def test_func_grad_matches_finite_differences(kind):
    m = make(kind, num_layers=2, bidirectional=True)
    x = rand(RNG, 4, 2, 3)
    params = {k: v.detach() for k, v in m.named_parameters()}

    def loss(p):
        out, _ = functional_call(m, p, (x,))
        return (out * out).sum()

    grads = grad(loss)(params)
    for name in ("weight_hh_l0", "weight_ih_l1_reverse", "bias_hh_l0_reverse"):
        for idx, fd in central_fd(lambda p: float(loss(p)), params, name).items():
            assert abs(grads[name].numpy()[idx] - fd) < 1e-6 * max(1.0, abs(fd)), (name, idx)


def test_backward_matches_func_grad():
    m = make("lstm", num_layers=2)
    x = rand(RNG, 4, 2, 3)
    h0 = (rand(RNG, 2, 2, 4), rand(RNG, 2, 2, 4))
    out, (h, c) = m(x, h0)
    (out.sum() + (h * c).sum()).backward()
    params = {k: v.detach() for k, v in m.named_parameters()}

    def loss(p):
        out, (h, c) = functional_call(m, p, (x, h0))
        return out.sum() + (h * c).sum()

    want = grad(loss)(params)
    for name, p in m.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), want[name].numpy(), rtol=1e-10, atol=1e-12)


# --- dropout --------------------------------------------------------------------------------------
def test_dropout_between_layers_only_in_training():
    m = make("gru", num_layers=2, dropout=0.5)
    plain = make("gru", num_layers=2)
    plain.load_state_dict(m.state_dict())
    x = rand(RNG, 5, 2, 3)
    m.eval()
    np.testing.assert_allclose(m(x)[0].numpy(), plain(x)[0].numpy(), rtol=1e-12)
    m.train()
    tp.manual_seed(0)
    trained = m(x)[0].numpy()
    assert not np.allclose(trained, plain(x)[0].numpy())
    tp.manual_seed(0)
    np.testing.assert_array_equal(m(x)[0].numpy(), trained)
    with pytest.warns(UserWarning, match="dropout option adds dropout after all but last recurrent layer"):
        nn.LSTM(3, 4, dropout=0.2)


# --- errors ---------------------------------------------------------------------------------------
class PackedSequence(tuple):  # what torch.nn.utils.rnn.pack_padded_sequence returns, in shape
    batch_sizes = None


@pytest.mark.parametrize("make_call,error,match", [
    (lambda: nn.LSTM(3, 4)(PackedSequence((tp.ones(5, 3),))), TypeError, "PackedSequence input is not supported"),
    (lambda: nn.LSTM(3, 4)([[1.0, 2.0, 3.0]]), TypeError, "LSTM: input must be a Tensor, got list"),
    (lambda: nn.GRU(3, 4)(tp.ones(2, 5, 2, 3)), ValueError, "GRU: Expected input to be 2D or 3D, got 4D"),
    (lambda: nn.RNN(3, 4)(tp.ones(5, 2, 2)), RuntimeError, "input.size\\(-1\\) must be equal to input_size. Expected 3, got 2"),
    (lambda: nn.RNN(3, 4)(tp.ones(5, 2, 3), tp.zeros(1, 3, 4)), RuntimeError, "Expected hx of size \\[1, 2, 4\\], got \\[1, 3, 4\\]"),
    (lambda: nn.RNN(3, 4)(tp.ones(5, 3), tp.zeros(1, 1, 4)), RuntimeError, "For unbatched 2-D input, hx should also be 2-D"),
    (lambda: nn.LSTM(3, 4)(tp.ones(5, 2, 3), tp.zeros(1, 2, 4)), TypeError, "hx must be a tuple \\(h_0, c_0\\)"),
    (lambda: nn.LSTM(3, 4, proj_size=2)(tp.ones(5, 2, 3), (tp.zeros(1, 2, 4), tp.zeros(1, 2, 4))), RuntimeError,
     "Expected h_0 of size \\[1, 2, 2\\], got \\[1, 2, 4\\]"),
    (lambda: nn.LSTM(3, 4)(tp.ones(5, 2, 3, dtype=tp.float64)), TypeError, "input has dtype tensorplay.float64, but the parameters are tensorplay.float32"),
    (lambda: nn.GRU(3, 4, proj_size=2), TypeError, "proj_size"),
    (lambda: nn.LSTM(3, 4, proj_size=4), ValueError, "proj_size has to be smaller than hidden_size"),
    (lambda: nn.LSTM(3, 4, dropout=1.5), ValueError, "dropout should be a number in range \\[0, 1\\]"),
    (lambda: nn.RNN(3, 4, nonlinearity="gelu"), ValueError, "Unknown nonlinearity 'gelu'"),
    (lambda: nn.LSTM(3, 0), ValueError, "hidden_size must be an integer >= 1, got 0"),
    (lambda: nn.LSTM(3, 4, num_layers=0), ValueError, "num_layers must be an integer >= 1"),
    (lambda: nn.LSTM(3, 4, batch_first=1), TypeError, "batch_first should be of type bool"),
    (lambda: nn.LSTMCell(3, 4)(tp.ones(2, 3), tp.zeros(2, 4)), TypeError, "LSTMCell: hx must be a tuple"),
    (lambda: nn.GRUCell(3, 4)(tp.ones(2, 3), tp.zeros(3, 4)), RuntimeError, "Expected hx of size \\[2, 4\\], got \\[3, 4\\]"),
    (lambda: nn.RNNCell(3, 4)(tp.ones(2, 2, 3)), ValueError, "RNNCell: Expected input to be 1D or 2D, got 3D"),
])
def test_bad_arguments_raise_clear_errors(make_call, error, match):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(error, match=match):
            make_call()


def test_the_callers_tensors_are_left_alone():
    m = make("lstm", bidirectional=True, batch_first=True)
    x = rand(RNG, 2, 5, 3)
    h0 = initial_state(m, 2)
    before = [x.numpy().copy()] + [h.numpy().copy() for h in h0]
    m(x, h0)
    for a, b in zip(before, [x] + list(h0)):
        np.testing.assert_array_equal(a, b.numpy())
