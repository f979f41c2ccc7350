"""An RK4 ODE integrator through `tp.fori_loop`, differentiated with respect to its parameters.

The Lotka-Volterra predator-prey system

    dx/dt = a x - b x y,    dy/dt = d x y - g y,    theta = (a, b, d, g)

is integrated with the classical fourth-order Runge-Kutta method for 400 steps. The time loop
is one `tp.fori_loop` with Python-int bounds, which is a `scan` in the graph: the integrator
traces to one loop node whatever the number of steps, and reverse mode (`grad`) runs the loop
backwards. The script fits nothing; it checks the derivative of a loss on the final state with
respect to theta, and of the whole trajectory's endpoint (jacfwd / jacrev), against float64
central finite differences, and shows that the loop is one node.

Run: python examples/rk4_ode.py
"""
import numpy as np

import tensorplay as tp
from tensorplay.func import grad, jacfwd, jacrev

STEPS = 400
DT = 0.025
THETA = [1.1, 0.4, 0.1, 0.4]       # a, b, d, g
STATE0 = [10.0, 5.0]               # prey, predators
TARGET = [2.0, 8.0]                # the state we would like to reach at t = STEPS * DT


def vector_field(state, theta):
    x, y = state[0], state[1]
    a, b, d, g = theta[0], theta[1], theta[2], theta[3]
    return tp.stack([a * x - b * x * y, d * x * y - g * y])


def rk4_step(state, theta, dt):
    k1 = vector_field(state, theta)
    k2 = vector_field(state + 0.5 * dt * k1, theta)
    k3 = vector_field(state + 0.5 * dt * k2, theta)
    k4 = vector_field(state + dt * k3, theta)
    return state + (dt / 6.0) * (k1 + 2.0 * k2 + 2.0 * k3 + k4)


def integrate(theta, state0):
    """The state after STEPS steps of RK4: one fori_loop."""
    return tp.fori_loop(0, STEPS, lambda i, s: rk4_step(s, theta, DT), state0)


def loss(theta, state0):
    miss = integrate(theta, state0) - tp.tensor(TARGET, dtype=theta.dtype)
    return (miss * miss).sum()


def numpy_rk4(theta, state0):
    """The same integrator in numpy, with a Python loop: an independent check of the forward pass."""
    a, b, d, g = theta
    s = np.array(state0, dtype=np.float64)

    def f(s):
        return np.array([a * s[0] - b * s[0] * s[1], d * s[0] * s[1] - g * s[1]])

    for _ in range(STEPS):
        k1 = f(s)
        k2 = f(s + 0.5 * DT * k1)
        k3 = f(s + 0.5 * DT * k2)
        k4 = f(s + DT * k3)
        s = s + DT / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return s


def central_differences(fn, theta: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """d fn / d theta, one central difference per parameter (float64)."""
    cols = []
    for j in range(theta.size):
        hi, lo = theta.copy(), theta.copy()
        hi[j] += eps
        lo[j] -= eps
        cols.append((np.asarray(fn(hi)) - np.asarray(fn(lo))) / (2 * eps))
    return np.stack(cols, -1)


def main():
    theta = tp.tensor(THETA, dtype=tp.float64)
    state0 = tp.tensor(STATE0, dtype=tp.float64)

    final = integrate(theta, state0)
    np.testing.assert_allclose(final.numpy(), numpy_rk4(THETA, STATE0), rtol=1e-12)
    print(f"state at t={STEPS * DT:g}: prey {float(final[0]):.4f}, predators {float(final[1]):.4f} "
          f"(numpy loop agrees)")

    graph = tp.make_graph(integrate, theta, state0).graph
    loops = [n.prim.name for n in graph.nodes if n.prim.name in ("scan", "while_loop")]
    assert loops == ["scan"], loops
    print(f"traced graph: {len(graph.nodes)} nodes, one {loops[0]} of length "
          f"{next(n for n in graph.nodes if n.prim.name == 'scan').attrs['length']}")

    # the gradient of the loss w.r.t. theta, by reverse mode through the loop, compiled
    value = float(loss(theta, state0))
    g_rev = tp.compile(grad(loss))(theta, state0).numpy()
    g_fd = central_differences(lambda t: float(loss(tp.tensor(t), state0)), np.array(THETA))
    print(f"loss {value:.6f}")
    print("d loss / d theta   reverse mode (grad)    central differences   rel. error")
    for name, a, b in zip("abdg", g_rev, g_fd):
        print(f"  {name:<16} {a:>22.10f} {b:>21.10f}   {abs(a - b) / max(abs(b), 1e-12):.1e}")
    np.testing.assert_allclose(g_rev, g_fd, rtol=1e-6, atol=1e-6)

    # the Jacobian of the final state w.r.t. theta: forward and reverse mode agree with differences
    j_fwd = jacfwd(integrate)(theta, state0).numpy()
    j_rev = jacrev(integrate)(theta, state0).numpy()
    j_fd = central_differences(lambda t: integrate(tp.tensor(t), state0).numpy(), np.array(THETA))
    np.testing.assert_allclose(j_fwd, j_fd, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(j_rev, j_fwd, rtol=1e-10, atol=1e-10)
    print(f"jacfwd and jacrev of the final state (2x4) agree with differences "
          f"(max |error| {np.abs(j_fwd - j_fd).max():.1e})")


if __name__ == "__main__":
    main()
