"""A whole training loop compiled into one executable with `tp.scan`.

A small MLP regresses ``y = sin(3x) + noise``. One Adam step (`optim.functional.adam`) is a
pure function of the training state (parameters, Adam's moments and step count) and one
minibatch; `tp.scan`
runs that step over a stack of minibatches (every epoch's shuffled batches, stacked), and
`tp.compile` turns the scan -- the forward pass, the gradient and the update of every
step -- into a single compiled loop. One call trains the network; the losses of every step
come back as the scan's stacked outputs.

The script checks that the loss falls, that the compiled loop gives the parameters that a
Python loop of the same steps gives, and that the traced program does not grow with the
number of steps.

Run: python examples/train_scan.py
"""
import numpy as np

import tensorplay as tp
from tensorplay.func import functional_call, grad_and_value
from tensorplay import nn
from tensorplay.optim import functional as optim_f

EPOCHS, BATCHES, BATCH = 40, 8, 32
LR = 0.01


def data(seed: int = 0):
    """EPOCHS x BATCHES shuffled minibatches, stacked: xs and ys of shape (steps, BATCH, 1)."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, (BATCHES * BATCH, 1)).astype(np.float32)
    y = (np.sin(3 * x) + 0.05 * rng.standard_normal(x.shape)).astype(np.float32)
    order = np.concatenate([rng.permutation(len(x)) for _ in range(EPOCHS)])
    xs, ys = x[order].reshape(-1, BATCH, 1), y[order].reshape(-1, BATCH, 1)
    return tp.tensor(xs), tp.tensor(ys), tp.tensor(x), tp.tensor(y)


tp.manual_seed(0)
model = nn.Sequential(nn.Linear(1, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 1))


def loss_fn(params, x, y):
    err = functional_call(model, params, (x,)) - y
    return (err * err).mean()


def adam_step(state, batch):
    """One Adam step: (params, Adam's state), (x, y) -> (new state, loss). A pure function of tensors."""
    params, opt_state = state
    x, y = batch
    grads, loss = grad_and_value(loss_fn)(params, x, y)
    return optim_f.adam(params, grads, opt_state, lr=LR), loss


def train(state, xs, ys):
    """Every step of the training run: one scan over the stacked minibatches."""
    return tp.scan(adam_step, state, (xs, ys))


def initial_state():
    """The module's parameters and Adam's state before the first step (what `optim.functional.adam` returns)."""
    params = {k: v.detach().clone() for k, v in model.named_parameters()}
    zeros = {k: tp.zeros_like(p) for k, p in params.items()}
    return params, {"step": tp.tensor(0.0, dtype=tp.float64), "exp_avg": zeros, "exp_avg_sq": dict(zeros)}


def main():
    xs, ys, x_all, y_all = data()
    state0 = initial_state()

    compiled_train = tp.compile(train)
    (params, opt_state), losses = compiled_train(state0, xs, ys)
    losses = losses.numpy()
    first, last = losses[:BATCHES].mean(), losses[-BATCHES:].mean()
    print(f"{int(opt_state['step'])} Adam steps in one compiled scan: loss {first:.4f} (first epoch) -> {last:.4f} (last epoch)")
    full = float(loss_fn(params, x_all, y_all))
    print(f"loss on all the training points: {full:.4f}")
    assert last < 0.1 * first and full < 0.02, (first, last, full)

    # the same steps as a Python loop of one compiled step: the same parameters
    step = tp.compile(adam_step)
    state = state0
    for i in range(xs.shape[0]):
        state, _ = step(state, (xs[i], ys[i]))
    for k in params:
        np.testing.assert_allclose(params[k].numpy(), state[0][k].numpy(), rtol=2e-4, atol=2e-5, err_msg=k)
    print("a Python loop of the same compiled step reaches the same parameters")

    # the traced training loop is one scan whose size does not depend on the number of steps
    sizes = []
    for steps in (2, xs.shape[0]):
        graph = tp.make_graph(train, state0, xs[:steps], ys[:steps]).graph
        loops = [n for n in graph.nodes if n.prim.name == "scan"]
        assert len(loops) == 1 and loops[0].attrs["length"] == steps
        sizes.append((len(graph.nodes), len(loops[0].attrs["body"].graph.nodes)))
    assert sizes[0] == sizes[1], sizes
    print(f"traced program: {sizes[1][0]} nodes around one scan whose body has {sizes[1][1]} nodes, "
          f"for 2 steps as for {xs.shape[0]}")


if __name__ == "__main__":
    main()
