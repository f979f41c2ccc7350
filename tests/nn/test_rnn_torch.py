"""nn.RNN / LSTM / GRU and the cells against torch's modules with the same weights (state_dict copied), in
float32: outputs, final states and gradients (loss.backward() and tensorplay.func.grad). Skipped without torch;
tests/nn/test_rnn.py checks the same layers against numpy by hand."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tensorplay as tp  # noqa: E402
from tensorplay import nn  # noqa: E402
from tensorplay.func import functional_call, grad  # noqa: E402

RNG = np.random.default_rng(11)
TOL = dict(rtol=2e-5, atol=2e-6)  # float32 on both sides
KINDS = {"rnn_tanh": ("RNN", {}), "rnn_relu": ("RNN", {"nonlinearity": "relu"}), "lstm": ("LSTM", {}),
         "lstm_proj": ("LSTM", {"proj_size": 3}), "gru": ("GRU", {})}


def pair(kind: str, **kwargs):
    """(tensorplay module, torch module) with torch's weights copied into ours."""
    name, extra = KINDS[kind]
    torch.manual_seed(0)
    theirs = getattr(torch.nn, name)(4, 5, **extra, **kwargs)
    ours = getattr(nn, name)(4, 5, **extra, **kwargs)
    state = {k: tp.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()}
    assert list(state) == list(ours.state_dict())
    ours.load_state_dict(state)
    assert repr(ours) == repr(theirs)
    return ours, theirs


def both(*shape):
    a = RNG.standard_normal(shape).astype(np.float32)
    return tp.tensor(a), torch.tensor(a)


def states_of(hx):
    return hx if isinstance(hx, tuple) else (hx,)


def loss(out, h):
    """A loss that reads the output and the last final state (c_n for an LSTM, else h_n)."""
    return (out * out).sum() + states_of(h)[-1].sum()


def close(ours, theirs):
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), **TOL)


def state_pair(m, batch):
    layers = m.num_layers * (2 if m.bidirectional else 1)
    lead = (layers,) if batch is None else (layers, batch)
    h = both(*lead, m.proj_size or m.hidden_size)
    if m.mode != "LSTM":
        return h
    c = both(*lead, m.hidden_size)
    return (h[0], c[0]), (h[1], c[1])


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("num_layers,bidirectional,batch_first", [(1, False, False), (2, True, False),
                                                                    (2, False, True), (1, True, True)])
@pytest.mark.parametrize("batched,with_h0", [(True, True), (False, True)])  # no h0: in test_rnn.py
def test_outputs_and_backward_match_torch(kind, num_layers, bidirectional, batch_first, batched, with_h0):
    ours, theirs = pair(kind, num_layers=num_layers, bidirectional=bidirectional, batch_first=batch_first)
    T, N = 6, 3
    x, tx = both(*(((N, T, 4) if batch_first else (T, N, 4)) if batched else (T, 4)))
    hx, thx = state_pair(ours, N if batched else None) if with_h0 else (None, None)
    out, h = ours(x, hx)
    tout, th = theirs(tx, thx)
    close(out, tout)
    for a, b in zip(states_of(h), states_of(th)):
        close(a, b)
    loss(out, h).backward()  # the same loss through both: every parameter's gradient
    loss(tout, th).backward()
    for (name, p), (tname, tpar) in zip(ours.named_parameters(), theirs.named_parameters()):
        assert name == tname
        np.testing.assert_allclose(p.grad.numpy(), tpar.grad.numpy(), rtol=1e-4, atol=2e-5, err_msg=name)


@pytest.mark.parametrize("kind", ["lstm", "gru", "rnn_tanh"])
def test_func_grad_matches_torch_autograd(kind):
    ours, theirs = pair(kind, num_layers=2, bidirectional=True)
    x, tx = both(5, 2, 4)
    params = {k: v.detach() for k, v in ours.named_parameters()}

    def loss(p, x):
        out, _ = functional_call(ours, p, (x,))
        return (out.sin()).sum()

    grads, gx = grad(loss, argnums=(0, 1))(params, x)
    tx.requires_grad_(True)
    tout, _ = theirs(tx)
    tout.sin().sum().backward()
    for name, tpar in theirs.named_parameters():
        np.testing.assert_allclose(grads[name].numpy(), tpar.grad.numpy(), rtol=1e-4, atol=2e-5, err_msg=name)
    np.testing.assert_allclose(gx.numpy(), tx.grad.numpy(), rtol=1e-4, atol=2e-5)


def test_dropout_zero_in_eval_matches_torch_with_dropout():
    ours, theirs = pair("lstm", num_layers=2, dropout=0.3)
    ours.eval(), theirs.eval()
    x, tx = both(4, 2, 4)
    close(ours(x)[0], theirs(tx)[0])


@pytest.mark.parametrize("name,extra", [("RNNCell", {}), ("RNNCell", {"nonlinearity": "relu"}), ("LSTMCell", {}),
                                        ("GRUCell", {}), ("GRUCell", {"bias": False})])
@pytest.mark.parametrize("batched", [True, False])
def test_cells_match_torch(name, extra, batched):
    torch.manual_seed(0)
    theirs = getattr(torch.nn, name)(4, 5, **extra)
    ours = getattr(nn, name)(4, 5, **extra)
    ours.load_state_dict({k: tp.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})
    assert repr(ours) == repr(theirs)
    lead = (3,) if batched else ()
    x, tx = both(*lead, 4)
    h, th = both(*lead, 5)
    if name == "LSTMCell":
        c, tc = both(*lead, 5)
        got, want = ours(x, (h, c)), theirs(tx, (th, tc))
    else:
        got, want = (ours(x, h),), (theirs(tx, th),)
    for a, b in zip(got, want):
        close(a, b)
    assert all(a.shape == tuple(b.shape) for a, b in zip(got, want))
