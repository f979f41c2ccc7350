"""The torch.func tutorials, each written once against a module named ``torch``.

Every function takes the library (real PyTorch, or tensorplay imported as torch: the only
change a port makes) and the initial weights as numpy arrays, and returns its results as numpy
arrays; tests/tutorials/test_torch_func_tutorials.py runs each with both libraries and compares.
The code follows the official tutorials (per-sample gradients, model ensembling,
Jacobians/Hessians/hvp, neural tangent kernels) and functorch's MAML regression example.
"""
from __future__ import annotations

import copy
from functools import partial

import numpy as np


def _np(t):
    return t.detach().numpy().copy()


def _load(torch, module, weights: dict):
    module.load_state_dict({k: torch.tensor(v) for k, v in weights.items()})
    return module


def weights_for(shapes: dict, seed: int) -> dict:
    """Initial weights by state-dict key (float32, scaled normal), shared by both libraries."""
    rng = np.random.default_rng(seed)
    return {k: (rng.normal(size=s) / np.sqrt(max(1, int(np.prod(s[1:])) if len(s) > 1 else s[0]))).astype(np.float32)
            for k, s in shapes.items()}


# --- per-sample gradients (intermediate/per_sample_grads) -------------------------------------------
CNN_SHAPES = {"conv1.weight": (4, 1, 3, 3), "conv1.bias": (4,), "fc1.weight": (10, 4 * 5 * 5), "fc1.bias": (10,)}


def _cnn(torch):
    nn, F = torch.nn, torch.nn.functional

    class SimpleCNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 4, 3, 1)
            self.fc1 = nn.Linear(4 * 5 * 5, 10)

        def forward(self, x):
            x = F.relu(self.conv1(x))
            x = F.max_pool2d(x, 2)
            x = torch.flatten(x, 1)
            return F.log_softmax(self.fc1(x), dim=1)

    return SimpleCNN()


def per_sample_grads(torch, weights, data, targets):
    """The per-sample gradients of an nll loss, by a loop of autograd.grad and by vmap(grad)."""
    functional_call, grad, vmap = torch.func.functional_call, torch.func.grad, torch.func.vmap
    F = torch.nn.functional
    model = _load(torch, _cnn(torch), weights)
    data, targets = torch.tensor(data), torch.tensor(targets)

    def compute_grad(sample, target):
        prediction = model(sample.unsqueeze(0))
        loss = F.nll_loss(prediction, target.unsqueeze(0))
        return torch.autograd.grad(loss, list(model.parameters()))

    looped = [compute_grad(data[i], targets[i]) for i in range(data.shape[0])]
    looped = [torch.stack(shards) for shards in zip(*looped)]

    params = {k: v.detach() for k, v in model.named_parameters()}
    buffers = {k: v.detach() for k, v in model.named_buffers()}

    def compute_loss(params, buffers, sample, target):
        predictions = functional_call(model, (params, buffers), (sample.unsqueeze(0),))
        return F.nll_loss(predictions, target.unsqueeze(0))

    vmapped = vmap(grad(compute_loss), in_dims=(None, None, 0, 0))(params, buffers, data, targets)
    out = {f"loop.{k}": _np(g) for k, g in zip(params, looped)}
    out.update({f"vmap.{k}": _np(g) for k, g in vmapped.items()})
    return out


# --- model ensembling (intermediate/ensembling) -----------------------------------------------------
MLP_SHAPES = {"fc1.weight": (16, 8), "fc1.bias": (16,), "fc2.weight": (16, 16), "fc2.bias": (16,),
              "fc3.weight": (4, 16), "fc3.bias": (4,)}


_MLP_CLASSES: dict = {}


def _mlp(torch):
    if torch.__name__ in _MLP_CLASSES:  # one class per library: stack_module_state wants equal classes
        return _MLP_CLASSES[torch.__name__]()
    nn, F = torch.nn, torch.nn.functional

    class SimpleMLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(8, 16)
            self.fc2 = nn.Linear(16, 16)
            self.fc3 = nn.Linear(16, 4)

        def forward(self, x):
            x = F.relu(self.fc1(x))
            x = F.relu(self.fc2(x))
            return self.fc3(x)

    _MLP_CLASSES[torch.__name__] = SimpleMLP
    return SimpleMLP()


def ensembling(torch, weights_list, minibatches):
    """Predictions of several models: a loop, and vmap over stacked parameters (same and distinct inputs)."""
    functional_call, stack_module_state = torch.func.functional_call, torch.func.stack_module_state
    models = [_load(torch, _mlp(torch), w) for w in weights_list]
    minibatches = torch.tensor(minibatches)
    minibatch = minibatches[0]
    loop_same = [model(minibatch) for model in models]
    loop_distinct = [model(mb) for model, mb in zip(models, minibatches)]

    params, buffers = stack_module_state(models)
    base_model = copy.deepcopy(models[0]).to("meta")

    def fmodel(params, buffers, x):
        return functional_call(base_model, (params, buffers), (x,))

    same = torch.vmap(fmodel, in_dims=(0, 0, None))(params, buffers, minibatch)
    distinct = torch.vmap(fmodel)(params, buffers, minibatches)
    return {"loop_same": _np(torch.stack(loop_same)), "loop_distinct": _np(torch.stack(loop_distinct)),
            "vmap_same": _np(same), "vmap_distinct": _np(distinct)}


# --- Jacobians, Hessians, hvp (intermediate/jacobians_hessians) -------------------------------------
def jacobians_hessians(torch, weight, bias, x, xs):
    """Jacobians by vjp rows, jacrev, jacfwd, vmapped over a batch; Hessians; hvp by jvp of grad."""
    hessian, jacfwd, jacrev, jvp, grad, vjp, vmap = torch.func.hessian, torch.func.jacfwd, torch.func.jacrev, torch.func.jvp, torch.func.grad, torch.func.vjp, torch.func.vmap
    F = torch.nn.functional
    weight, bias, x, xs = torch.tensor(weight), torch.tensor(bias), torch.tensor(x), torch.tensor(xs)

    def predict(weight, bias, x):
        return F.linear(x, weight, bias).tanh()

    _, vjp_fn = vjp(partial(predict, weight, bias), x)
    unit_vectors = torch.eye(weight.shape[0])
    (by_rows,) = vmap(vjp_fn)(unit_vectors)
    rev = jacrev(predict, argnums=2)(weight, bias, x)
    fwd = jacfwd(predict, argnums=2)(weight, bias, x)
    w_and_b = jacrev(predict, argnums=(0, 1))(weight, bias, x)
    batched = vmap(jacrev(predict, argnums=2), in_dims=(None, None, 0))(weight, bias, xs)
    hess = hessian(predict, argnums=2)(weight, bias, x)
    hess_fr = jacfwd(jacrev(predict, argnums=2), argnums=2)(weight, bias, x)

    def f(x):
        return x.sin().sum()

    def hvp(f, primals, tangents):
        return jvp(grad(f), primals, tangents)[1]

    v = torch.ones_like(x) * 0.5
    af = torch.autograd.functional
    return {"by_rows": _np(by_rows), "jacrev": _np(rev), "jacfwd": _np(fwd), "dw": _np(w_and_b[0]),
            "db": _np(w_and_b[1]), "batched": _np(batched), "hessian": _np(hess), "hessian_fr": _np(hess_fr),
            "hvp": _np(hvp(f, (x,), (v,))),
            "af_jacobian": _np(af.jacobian(partial(predict, weight, bias), x)),
            "af_hessian": _np(af.hessian(f, x)), "af_hvp": _np(af.hvp(f, x, v)[1])}


# --- neural tangent kernels (intermediate/neural_tangent_kernels) ----------------------------------
NTK_SHAPES = {"conv1.weight": (4, 1, 3, 3), "conv1.bias": (4,), "fc.weight": (3, 4 * 4 * 4), "fc.bias": (3,)}


def _ntk_net(torch):
    nn = torch.nn

    class CNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 4, (3, 3))
            self.fc = nn.Linear(4 * 4 * 4, 3)

        def forward(self, x):
            x = self.conv1(x).relu()
            return self.fc(x.flatten(1))

    return CNN()


def neural_tangent_kernels(torch, weights, x_train, x_test):
    """The empirical NTK by Jacobian contraction ('full' and 'trace') and by NTK-vector products."""
    functional_call, jacrev, jvp, vjp, vmap = torch.func.functional_call, torch.func.jacrev, torch.func.jvp, torch.func.vjp, torch.func.vmap
    net = _load(torch, _ntk_net(torch), weights)
    x_train, x_test = torch.tensor(x_train), torch.tensor(x_test)
    params = {k: v.detach() for k, v in net.named_parameters()}

    def fnet_single(params, x):
        return functional_call(net, params, (x.unsqueeze(0),)).squeeze(0)

    def empirical_ntk_jacobian_contraction(fnet_single, params, x1, x2, compute="full"):
        jac1 = vmap(jacrev(fnet_single), (None, 0))(params, x1)
        jac1 = [j.flatten(2) for j in jac1.values()]
        jac2 = vmap(jacrev(fnet_single), (None, 0))(params, x2)
        jac2 = [j.flatten(2) for j in jac2.values()]
        einsum_expr = {"full": "Naf,Mbf->NMab", "trace": "Naf,Maf->NM", "diagonal": "Naf,Maf->NMa"}[compute]
        result = torch.stack([torch.einsum(einsum_expr, j1, j2) for j1, j2 in zip(jac1, jac2)])
        return result.sum(0)

    def empirical_ntk_ntk_vps(func, params, x1, x2):
        def get_ntk(x1, x2):
            def func_x1(params):
                return func(params, x1)

            def func_x2(params):
                return func(params, x2)

            output, vjp_fn = vjp(func_x1, params)

            def get_ntk_slice(vec):
                vjps = vjp_fn(vec)
                _, jvps = jvp(func_x2, (params,), vjps)
                return jvps

            basis = torch.eye(output.numel(), dtype=output.dtype, device=output.device).view(output.numel(), -1)
            return vmap(get_ntk_slice)(basis)

        result = vmap(vmap(get_ntk, (None, 0)), (0, None))(x1, x2)
        return result

    return {"full": _np(empirical_ntk_jacobian_contraction(fnet_single, params, x_train, x_test)),
            "trace": _np(empirical_ntk_jacobian_contraction(fnet_single, params, x_train, x_test, "trace")),
            "ntk_vps": _np(empirical_ntk_ntk_vps(fnet_single, params, x_train, x_test))}


# --- MAML (functorch examples/maml_regression) ------------------------------------------------------
def maml_regression(torch, weights, tasks, *, outer_steps: int = 4, inner_steps: int = 2, inner_lr: float = 0.1):
    """MAML on sine regression: an inner loop of grad steps per task under vmap, the meta-gradient
    by grad through it, written into ``.grad`` and applied by Adam. Returns losses and parameters."""
    grad, vmap = torch.func.grad, torch.func.vmap
    F = torch.nn.functional
    params = [torch.tensor(w).requires_grad_() for w in weights]
    opt = torch.optim.Adam(params, lr=1e-2)
    x_spt, y_spt, x_qry, y_qry = (torch.tensor(t) for t in tasks)

    def net(params, x):
        x = F.linear(x, params[0], params[1]).relu()
        x = F.linear(x, params[2], params[3]).relu()
        return F.linear(x, params[4], params[5])

    def inner_loss(params, x, y):
        return F.mse_loss(net(params, x), y)

    def task_loss(params, xs, ys, xq, yq):
        for _ in range(inner_steps):
            grads = grad(inner_loss)(params, xs, ys)
            params = [p - inner_lr * g for p, g in zip(params, grads)]
        return inner_loss(params, xq, yq)

    def meta_loss(params):
        return vmap(task_loss, in_dims=(None, 0, 0, 0, 0))(params, x_spt, y_spt, x_qry, y_qry).mean()

    losses = []
    for _ in range(outer_steps):
        opt.zero_grad()
        detached = [p.detach() for p in params]
        meta_grads = grad(meta_loss)(detached)
        for p, g in zip(params, meta_grads):
            p.grad = g
        opt.step()
        losses.append(float(meta_loss([p.detach() for p in params])))
    # the same meta-gradient by loss.backward() through the transforms
    for p in params:
        p.grad = None
    meta_loss(params).backward()
    out = {f"p{i}": _np(p) for i, p in enumerate(params)}
    out.update({f"backward_grad{i}": _np(p.grad) for i, p in enumerate(params)})
    out["losses"] = np.array(losses)
    return out


MAML_SHAPES = [(16, 1), (16,), (16, 16), (16,), (1, 16), (1,)]


# --- a training loop: DataLoader, clip_grad_norm_, StepLR -------------------------------------------
def training_loop(torch, weights, x, y, *, epochs: int = 3):
    """SGD with momentum over a DataLoader, gradient clipping and a StepLR schedule; per-batch losses."""
    nn = torch.nn
    DataLoader, TensorDataset = torch.utils.data.DataLoader, torch.utils.data.TensorDataset
    model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 3))
    _load(torch, model, weights)
    loader = DataLoader(TensorDataset(torch.tensor(x), torch.tensor(y)), batch_size=16, shuffle=False)
    opt = torch.optim.SGD(model.parameters(), lr=0.2, momentum=0.9)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    loss_fn = nn.CrossEntropyLoss()
    losses, norms = [], []
    for _ in range(epochs):
        model.train()
        for xb, yb in loader:
            opt.zero_grad()
            loss = loss_fn(model(xb), yb)
            loss.backward()
            norms.append(float(torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)))
            opt.step()
            losses.append(loss.item())
        sched.step()
    model.eval()
    with torch.no_grad():
        final = model(torch.tensor(x))
    out = {k: _np(v) for k, v in model.state_dict().items()}
    out.update({"losses": np.array(losses), "norms": np.array(norms), "final": _np(final),
                "lr": np.array(opt.param_groups[0]["lr"])})
    return out


TRAIN_SHAPES = {"0.weight": (16, 8), "0.bias": (16,), "2.weight": (3, 16), "2.bias": (3,)}
