"""Random programs: generation from a seed, their Python source (tensorplay and numpy
twins), numpy evaluation with validity checks, and tolerances.

A program is a list of inputs (literal arrays with a layout) and a list of steps, each one op
of `tools.fuzz.ops` applied to earlier values. All values of a program have one dtype and
shapes that broadcast against the program's *base shape*, so that any two values can meet in
a binary op and any step can be removed (its uses then read its first operand instead).

>>> p = generate(0)
>>> "def program(" in p.source() and "def numpy_program(" in p.source()
True
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from .known import KNOWN_FAILURES, known_failure
from .ops import FLOAT, INT, OPS, PROGRAM_HELPERS, Op

BASE_SHAPES = [(), (1,), (0,), (3,), (5,), (2, 3), (1, 4), (3, 1), (2, 0), (4, 4), (2, 1, 3), (2, 3, 4), (1, 1),
               (3, 2, 1)]
DTYPES = ["float32"] * 6 + ["float64"] * 2 + ["int32", "int64"]
MAX_STEPS = 6
KINK_MARGIN = 1e-3     # ops with kinks are kept only this far (relative to 1 + |values|) from them
INT_LIMIT = 2 ** 20    # integer programs keep |values| below this: no overflow in any dtype
FLOAT_LIMIT = 1e4


@dataclass(frozen=True)
class Input:
    name: str
    data: np.ndarray
    layout: str


@dataclass(frozen=True)
class Step:
    out: str
    op: str
    args: tuple[str, ...]
    d: int | None = None
    w: str | None = None


@dataclass(frozen=True)
class Program:
    """A random program; `source()` is its Python text, `case()` its literal inputs."""

    seed: int
    dtype: str
    base: tuple[int, ...]
    inputs: tuple[Input, ...]
    steps: tuple[Step, ...]
    outputs: tuple[str, ...]
    avoid: tuple[str, ...] = field(default=(), compare=False)   # names of known failures to stay clear of

    @property
    def kind(self) -> str:
        return FLOAT if np.dtype(self.dtype).kind == "f" else INT

    # ------------------------------------------------------------------------------------------
    def source(self) -> str:
        """Python source defining ``program`` (tensorplay) and ``numpy_program`` (numpy)."""
        names = ", ".join(i.name for i in self.inputs)
        lines = [PROGRAM_HELPERS.strip("\n"), "", "", f"def program({names}):"]
        lines += [f"    {s.out} = {_render(OPS[s.op].tp, s, self.base)}" for s in self.steps]
        lines += [f"    return ({', '.join(self.outputs)},)", "", "", f"def numpy_program({names}):"]
        lines += [f"    {s.out} = {_render(OPS[s.op].np, s, self.base)}" for s in self.steps]
        lines += [f"    return ({', '.join(self.outputs)},)", ""]
        return "\n".join(lines)

    def functions(self):
        """(program, numpy_program) as Python functions."""
        from . import harness

        namespace = dict(vars(harness))
        exec(compile(self.source(), f"<fuzz program {self.seed}>", "exec"), namespace)  # noqa: S102
        return namespace["program"], namespace["numpy_program"]

    def case(self, **extra) -> dict:
        """The literal inputs and tolerances the checks of `tools.fuzz.harness` take."""
        values = evaluate(self)
        case = {"inputs": [(i.data, i.layout) for i in self.inputs], "dtype": self.dtype,
                "atol": tolerance(self, values), "seed": self.seed,
                "in_dims": vmap_dims(self)}
        case.update(extra)
        return case

    def ops(self) -> list[str]:
        return [s.op for s in self.steps]


def _render(template: str, s: Step, base) -> str:
    return template.format(*s.args, d=s.d, w=s.w, base=tuple(base))


def vmap_dims(p: Program) -> list:
    """Batch every input but the weights (in_dims None), so vmap sees mixed batching."""
    weights = {s.w for s in p.steps if s.w}
    dims = [None if i.name in weights else 0 for i in p.inputs]
    if all(d is None for d in dims):
        dims[0] = 0
    return dims


# ----------------------------------------------------------------------------------------------
# numpy evaluation: shapes, values, validity
# ----------------------------------------------------------------------------------------------
class Invalid(ValueError):
    """The program leaves the domain the fuzzer promises to stay in (or is malformed)."""


def _wide(p: Program, a: np.ndarray) -> np.ndarray:
    return np.asarray(a, np.float64 if p.kind == FLOAT else np.int64)


def evaluate(p: Program) -> dict[str, np.ndarray]:
    """Every value of `p` computed with numpy in float64/int64; raises `Invalid` when a step is
    malformed, leaves the finite range, or sits too close to a kink of its op."""
    from . import harness

    env: dict[str, np.ndarray] = {i.name: _wide(p, i.data) for i in p.inputs}
    namespace = dict(vars(harness))
    exec(compile(PROGRAM_HELPERS, "<fuzz helpers>", "exec"), namespace)  # noqa: S102
    for s in p.steps:
        op = OPS[s.op]
        if any(a not in env for a in s.args) or (s.w is not None and s.w not in env):
            raise Invalid(f"{s.out}: undefined operand")
        operands = [env[a] for a in s.args]
        _check_applicable(p, op, s, operands, env)
        namespace.update(env)
        try:
            with np.errstate(all="raise"):
                value = np.asarray(eval(_render(op.np, s, p.base), namespace))  # noqa: S307
        except (ValueError, IndexError, FloatingPointError, TypeError, ZeroDivisionError) as e:
            raise Invalid(f"{s.out} = {s.op}: {e}") from None
        _check_value(p, s, value)
        env[s.out] = value
    if not p.outputs or any(o not in env for o in p.outputs):
        raise Invalid("undefined output")
    return env


def _check_applicable(p: Program, op: Op, s: Step, operands, env) -> None:
    x = operands[0]
    if p.kind not in op.kinds:
        raise Invalid(f"{s.op} does not take {p.dtype}")
    if x.ndim < op.min_ndim:
        raise Invalid(f"{s.op} needs {op.min_ndim} dims")
    if op.dim and not (s.d is not None and -x.ndim <= s.d < 0):
        raise Invalid(f"{s.op}: dim {s.d} out of range for {x.shape}")
    if op.dim and op.nonempty and x.shape[s.d] == 0:
        raise Invalid(f"{s.op}: empty dimension")
    if op.weight and (s.w is None or env[s.w].shape != (x.shape[-1], x.shape[-1])):
        raise Invalid(f"{s.op}: weight shape")
    if op.same_shape and np.broadcast_shapes(*[o.shape for o in operands]) != x.shape:
        raise Invalid(f"{s.op}: operands do not broadcast to the first one's shape")
    try:
        np.broadcast_shapes(*[o.shape for o in operands], p.base)
    except ValueError:
        raise Invalid(f"{s.op}: shapes do not broadcast") from None
    for name in p.avoid:
        if known_failure(name, s.op, operands, s):
            raise Invalid(f"{s.op}: known failure {name}")
    if op.kink is not None and p.kind == FLOAT:
        distance = op.kink(x, s.d) if op.dim else op.kink(*operands)
        scale = 1.0 + max(float(np.abs(o).max()) if o.size else 0.0 for o in operands)
        if distance < KINK_MARGIN * scale:
            raise Invalid(f"{s.op}: too close to a kink ({distance:.2g})")


def _check_value(p: Program, s: Step, value: np.ndarray) -> None:
    try:
        np.broadcast_shapes(value.shape, p.base)
    except ValueError:
        raise Invalid(f"{s.out}: shape {value.shape} left the base shape {p.base}") from None
    if value.size == 0:
        return
    limit = FLOAT_LIMIT if p.kind == FLOAT else INT_LIMIT
    if not np.all(np.isfinite(value)) or float(np.abs(value).max()) > limit:
        raise Invalid(f"{s.out} = {s.op}: values beyond {limit:g}")


# ----------------------------------------------------------------------------------------------
# Tolerance
# ----------------------------------------------------------------------------------------------
def tolerance(p: Program, values: dict[str, np.ndarray]) -> float:
    """Absolute tolerance for comparing two evaluations of `p` (eager, compiled, numpy, vmap).

    Zero for integers. For floats: ``eps(dtype) * budget * scale``, where the budget adds up
    each step's ulp cost (transcendentals a few ulps, as `codegen.vecmath` bounds them and
    numpy's libm adds about one; reductions and contractions one ulp per reduced element) with
    a factor 8 for error propagation through later steps, and `scale` is the largest magnitude
    of any value of the program (inputs included). Depends only on the program, never on the host.
    """
    if p.kind != FLOAT:
        return 0.0
    budget = 8.0
    for s in p.steps:
        op = OPS[s.op]
        x = values[s.args[0]] if s.args[0] in values else np.zeros(())
        length = 1
        if op.reduces:
            length = x.size if s.d is None or op.weight or x.ndim == 0 else x.shape[s.d]
        budget += 8.0 * (op.ulp + 1.0) * max(1, length)
    scale = max([1.0] + [float(np.abs(v).max()) for v in values.values() if v.size])
    return float(np.finfo(np.dtype(p.dtype)).eps) * budget * scale


# ----------------------------------------------------------------------------------------------
# Generation
# ----------------------------------------------------------------------------------------------
def _compatible_shape(rng, base: tuple[int, ...]) -> tuple[int, ...]:
    """A shape that broadcasts against `base`: a suffix of it, with some dims turned to 1."""
    keep = len(base) - int(rng.integers(0, len(base) + 1)) if base and rng.random() < 0.3 else len(base)
    shape = list(base[len(base) - keep:])
    for i in range(len(shape)):
        if rng.random() < 0.2:
            shape[i] = 1
    return tuple(shape)


def _data(rng, shape, dtype: str) -> np.ndarray:
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    return rng.integers(-5, 6, shape).astype(dtype)


def _layout(rng, data: np.ndarray) -> tuple[np.ndarray, str]:
    choices = ["contig", "contig"]
    if data.ndim >= 2:
        choices.append("transposed")
    if data.ndim >= 1:
        choices.append("strided")
    if data.ndim >= 1 and data.shape[0] > 1:
        choices.append("expanded")
    layout = str(rng.choice(choices))
    if layout == "expanded":
        data = np.ascontiguousarray(np.broadcast_to(data[:1], data.shape))
    return data, layout


def _new_input(rng, inputs: list[Input], shape, dtype: str) -> Input:
    data, layout = _layout(rng, _data(rng, shape, dtype))
    inp = Input(f"a{len(inputs)}", data, layout)
    inputs.append(inp)
    return inp


def generate(seed: int, *, exclude: frozenset[str] = frozenset(), avoid_known: bool = True) -> Program:
    """The random program of `seed` (deterministic), avoiding the ops named in `exclude` and,
    with `avoid_known`, the patterns of `known.KNOWN_FAILURES`."""
    rng = np.random.default_rng([seed, 0x7F5A])
    dtype = str(rng.choice(DTYPES))
    base = BASE_SHAPES[int(rng.integers(len(BASE_SHAPES)))]
    inputs: list[Input] = []
    for _ in range(int(rng.integers(1, 4))):
        _new_input(rng, inputs, _compatible_shape(rng, base), dtype)
    kind = FLOAT if np.dtype(dtype).kind == "f" else INT
    candidates = [op for op in OPS.values() if kind in op.kinds and op.name not in exclude]
    steps: list[Step] = []
    avoid = tuple(sorted(KNOWN_FAILURES)) if avoid_known else ()
    program = Program(seed, dtype, base, tuple(inputs), (), (inputs[0].name,), avoid)
    values = evaluate(program)
    for _ in range(int(rng.integers(1, MAX_STEPS + 1))):
        for _attempt in range(12):
            step, new_inputs = _random_step(rng, program, values, candidates, len(steps))
            trial = replace(program, inputs=tuple(new_inputs), steps=program.steps + (step,), outputs=(step.out,))
            try:
                values = evaluate(trial)
            except Invalid:
                continue
            program = trial
            steps.append(step)
            break
    outs = [program.outputs[0]]
    if len(program.steps) > 1 and rng.random() < 0.4:
        outs.insert(0, program.steps[int(rng.integers(len(program.steps) - 1))].out)
    return replace(program, outputs=tuple(outs))


def _random_step(rng, program: Program, values, candidates: list[Op], index: int):
    op = candidates[int(rng.integers(len(candidates)))]
    names = list(values)
    recent = names[-3:]
    args = []
    for k in range(op.arity):
        pool = recent if (k == 0 and rng.random() < 0.7) else names
        args.append(str(rng.choice(pool)))
    x = values[args[0]]
    d = -int(rng.integers(1, x.ndim + 1)) if op.dim and x.ndim else (None if not op.dim else -1)
    inputs = list(program.inputs)
    w = None
    if op.weight and x.ndim >= 1:
        n = x.shape[-1]
        w = _new_input(rng, inputs, (n, n), program.dtype).name
    return Step(f"v{index}", op.name, tuple(args), d, w), inputs


def rebuild(p: Program, keep: list[int]) -> Program:
    """`p` with only the steps at indices `keep`; uses of a removed value read its first operand,
    and inputs that nothing reads any more are dropped."""
    kept = set(keep)
    alias: dict[str, str] = {}

    def resolve(name: str) -> str:
        while name in alias:
            name = alias[name]
        return name

    steps = []
    for i, s in enumerate(p.steps):
        if i not in kept:
            alias[s.out] = s.args[0]
            continue
        steps.append(replace(s, args=tuple(resolve(a) for a in s.args)))
    outputs = tuple(dict.fromkeys(resolve(o) for o in p.outputs))
    used = {a for s in steps for a in s.args} | {s.w for s in steps if s.w} | set(outputs)
    inputs = tuple(i for i in p.inputs if i.name in used) or p.inputs[:1]
    return replace(p, inputs=inputs, steps=tuple(steps), outputs=outputs)


def describe(p: Program) -> str:
    """One line: dtype, base shape, input shapes and layouts, and the op list."""
    ins = ", ".join(f"{i.name}:{list(i.data.shape)}{'' if i.layout == 'contig' else '/' + i.layout}"
                    for i in p.inputs)
    return f"{p.dtype} base {list(p.base)}; inputs {ins}; ops {' '.join(p.ops()) or '-'}"


__all__ = ["Program", "Input", "Step", "Invalid", "generate", "evaluate", "tolerance", "rebuild", "describe",
           "vmap_dims", "math"]
