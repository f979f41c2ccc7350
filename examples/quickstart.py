"""A five-minute tour of tensorplay: eager tensors, transforms, and the compiler.

Run: python examples/quickstart.py
"""
import tensorplay as tp
from tensorplay.func import grad, jacrev, vmap

tp.manual_seed(0)

# Eager tensors behave like PyTorch's.
x = tp.randn(4, 3)
w = tp.randn(3, 2)
print("x @ w =", x @ w)


# Transforms take functions and return functions.
def loss(w, x):
    return tp.tanh(x @ w).pow(2).mean()


g = grad(loss)(w, x)                                     # d loss / d w, shape (3, 2)
per_sample = vmap(grad(loss), in_dims=(None, 0))(w, x)   # one gradient per row of x
jac = jacrev(tp.sin)(tp.linspace(0, 1, 4))               # a 4x4 diagonal Jacobian
print("grad:", g.shape, "per-sample grads:", per_sample.shape, "jacobian:", jac.shape)
assert tp.allclose(per_sample.mean(0), g, atol=1e-6)

# Every transform is a graph pass; look at the graph the engine builds.
print(tp.make_graph(loss, w, x))

# tp.compile traces once per input signature and runs native code.
fast_loss = tp.compile(loss)
print("compiled loss:", fast_loss(w, x).item(), "eager loss:", loss(w, x).item())
