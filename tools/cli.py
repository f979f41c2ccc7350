"""``tensorplay-ir``: look at what tensorplay does to a function, stage by stage.

::

    tensorplay-ir dump  MODULE:FUNC --arg f32[8,3] [--transform SPEC ...] [--pass SPEC ...]
                        [--print-after-all] [--llvm] [--asm] [--stats] [--stage N|final]
    tensorplay-ir dump  FILE.tpir [--transform ...] [--pass ...] ...
    tensorplay-ir opt   FILE.tpir -p simplify,dce [--print-ir-after-all]
    tensorplay-ir run   FILE.tpir [--seed N] [--rtol R] [--atol A]
    tensorplay-ir run   MODULE:FUNC --arg f32[8,3] [--transform SPEC ...]
    tensorplay-ir verify FILE.tpir [FILE.tpir ...]
    tensorplay-ir viz   (MODULE:FUNC --arg ... | FILE.tpir) [--transform ...] [--stage N|final] -o OUT.svg|.html|.dot
    tensorplay-ir list  {transforms,passes,prims}

Every subcommand reads ``-`` as standard input and writes to ``-o FILE`` instead of standard
output (for ``viz``, ``-o`` names the drawing); ``--version`` prints the version.
``python -m tensorplay.tools.cli`` is the same program. Exit status: 0 success, 1
invalid IR (``verify``) or results outside tolerance (``run``), 2 bad input
(unknown module or function, malformed spec or IR, unknown transform, missing
file), reported as one ``tensorplay-ir: error: ...`` line on stderr.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import sys
import traceback
from typing import Sequence, TextIO

PROG = "tensorplay-ir"

__all__ = ["main", "build_parser", "CLIError"]


class CLIError(Exception):
    """A user-facing error: printed as one line, exit status `status`."""

    def __init__(self, message: str, status: int = 2):
        super().__init__(message)
        self.status = status


class _Parser(argparse.ArgumentParser):
    """argparse, but errors are one line (no usage dump) and go through `CLIError`."""

    def error(self, message: str):  # type: ignore[override]
        raise CLIError(f"{message} (see '{self.prog} --help')")


# ----------------------------------------------------------------------------------------------
# Inputs
# ----------------------------------------------------------------------------------------------
def _is_ir_file(target: str) -> bool:
    if target == "-":
        return True
    return target.endswith((".tpir", ".mlir")) or (os.path.isfile(target) and not target.endswith(".py")
                                                    and ":" not in os.path.basename(target))


def _read(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except FileNotFoundError:
        raise CLIError(f"no such file: {path}") from None
    except IsADirectoryError:
        raise CLIError(f"{path} is a directory, not an IR file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise CLIError(f"cannot read {path}: {e}") from None


def _parse_ir_file(path: str, args=None):
    from tensorplay.ir.text import ParseError, parse_graph

    text = _read(path)
    try:
        return parse_graph(text, _load_resources(path, args))
    except ParseError as e:
        raise CLIError(f"{_shown(path)}:{e.line}:{e.column}: {e.message}") from None


def _resources_path(path: str | None, args) -> str | None:
    """The side file of elided constants: --resources, else FILE with the suffix .npz."""
    given = getattr(args, "resources", None)
    if given:
        return given
    return None if path in (None, "-") else os.path.splitext(path)[0] + ".npz"


def _load_resources(path: str, args) -> dict | None:
    """The elements of the elided constants of IR file `path` (None without a side file)."""
    side = _resources_path(path, args)
    if side is None or not os.path.exists(side):
        if getattr(args, "resources", None):
            raise CLIError(f"no such file: {side}")
        return None
    import numpy as np

    try:
        with np.load(side, allow_pickle=False) as data:
            return {k: data[k] for k in data.files}
    except (OSError, ValueError) as e:
        raise CLIError(f"cannot read the constants file {side}: {e}") from None


def _write_resources(graphs, args) -> None:
    """Write the elided constants of `graphs` beside the output (-o FILE: FILE.npz; or --resources)."""
    from tensorplay.ir.constants import resources

    found = resources(list(graphs))
    if not found:
        return
    side = _resources_path(getattr(args, "output", None), args)
    if side is None:
        print(f"{PROG}: note: {len(found)} large constant(s) are elided as dense_resource<...>; write their "
              f"elements with -o FILE (to FILE's name with .npz) or --resources FILE.npz", file=sys.stderr)
        return
    import numpy as np

    try:
        np.savez(side, **found)
    except OSError as e:
        raise CLIError(f"cannot write {side}: {e.strerror or e}") from None


def _shown(path: str) -> str:
    return "<stdin>" if path == "-" else path


def _specs(values: Sequence[str] | None, what: str):
    from .cli_specs import parse_call_spec

    return [parse_call_spec(v, what) for v in values or ()]


def _stages(args):
    """Build the pipeline stages for `dump` and `viz`."""
    from .cli_pipeline import build_stages, transform_def
    from .cli_specs import load_target, parse_tensor_spec

    transforms = _specs(args.transform, "transform")
    passes = _specs(args.passes, "pass")
    for t in transforms:
        transform_def(t)  # validate every spec before doing any work
    tensor_specs = [parse_tensor_spec(a) for a in args.arg] if args.arg else None
    if _is_ir_file(args.target):
        graph = _parse_ir_file(args.target, args)
        if tensor_specs is not None and not transforms:
            given = [s.type for s in tensor_specs]
            if given != graph.in_types:
                raise CLIError(f"--arg {' '.join(map(str, tensor_specs))} does not match the inputs of "
                               f"@{graph.name} ({', '.join(map(str, graph.in_types))}); "
                               f"--arg is only needed with --transform")
        return build_stages(graph=graph, source=_shown(args.target), specs=tensor_specs, transforms=transforms,
                            passes=passes, seed=args.seed)
    fn = load_target(args.target)
    return build_stages(fn=fn, specs=tensor_specs or [], transforms=transforms, passes=passes, seed=args.seed)


def _select_stage(stages, which: str | None):
    if which is None or which == "final":
        return stages[-1]
    try:
        i = int(which)
    except ValueError:
        raise CLIError(f"--stage must be a stage number or 'final', got {which!r}") from None
    if not -len(stages) <= i < len(stages):
        raise CLIError(f"--stage {i} is out of range: there are {len(stages)} stages (0..{len(stages) - 1})")
    return stages[i]


def _compile(graph):
    try:
        from tensorplay import codegen
    except ImportError as e:
        raise CLIError(f"the compiled backend is not available: {e}") from None
    try:
        return codegen.compile_graph(graph)
    except NotImplementedError as e:
        raise CLIError(f"cannot compile @{graph.name}: {e}") from None


# ----------------------------------------------------------------------------------------------
# dump
# ----------------------------------------------------------------------------------------------
def _banner(title: str) -> str:
    return f"// -----// {title} //----- //"


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.2f} ms"


def _print_stats(out: TextIO, stages, exe) -> None:
    rows = [("stage", "what", "inputs", "nodes", "outputs", "time", "in passes")]
    for s in stages:
        rows.append((str(s.index), s.label, str(len(s.graph.inputs)), str(len(s.graph.nodes)),
                     str(len(s.graph.outputs)), _ms(s.seconds), _ms(s.pass_seconds)))
        for p in s.passes:
            rows.append(("", "  " * (p.depth + 1) + f"pass {p.name}", "", str(len(p.graphs[0][1].nodes)), "",
                         _ms(p.seconds), ""))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    print(_banner("stats"), file=out)
    for r in rows:
        cells = [r[0].rjust(widths[0]), r[1].ljust(widths[1])] + [c.rjust(w) for c, w in zip(r[2:], widths[2:])]
        print("  ".join(cells).rstrip(), file=out)
    trace_total = sum(s.seconds - s.pass_seconds for s in stages if s.kind in ("trace", "transform"))
    pass_total = sum(s.pass_seconds if s.kind != "pass" else s.seconds for s in stages)
    print(f"tracing {_ms(trace_total)}; passes {_ms(pass_total)}", file=out)
    if exe is None:
        return
    st = dict(getattr(exe, "stats", {}) or {})
    final = stages[-1].graph
    kernels = st.get("kernels", len(getattr(exe, "kernels", [])))
    print(f"compile @{final.name}: {kernels} kernels after fusion of {len(final.nodes)} nodes "
          f"({st.get('source', 'compiled')})", file=out)
    _print_compile_phases(out, st)
    shown = {"phases", "kernels", "source", "total_s", "schedule_s", "plan_s", "lower_s", "llvm_parse_s",
             "llvm_opt_s", "codegen_s", "link_s"}  # the per-phase keys repeat the table
    for k, v in st.items():
        if k not in shown:
            print(f"  {k}: {_ms(v) if k.endswith('_s') else v}", file=out)
    for k in getattr(exe, "kernels", []) or []:
        if isinstance(k, dict):
            nodes = k.get("nodes", [])
            print(f"  kernel {k.get('name', '?')}: {k.get('kind', '?')} over {list(k.get('domain', ()))}, "
                  f"{len(nodes)} node(s): {' '.join(map(str, nodes))}", file=out)


_PHASE_LABELS = {"schedule": "fusion/scheduling", "plan": "buffer planning", "cache_lookup": "disk cache lookup",
                 "llvm_ir": "LLVM IR build", "llvm_parse": "LLVM parse+verify", "llvm_opt": "LLVM optimisation",
                 "codegen": "machine code", "link": "JIT link", "cache_store": "disk cache store",
                 "prepare": "call setup"}


def _print_compile_phases(out: TextIO, st: dict) -> None:
    """One row per compile phase of `Executable.stats["phases"]`: time and share of the total."""
    phases = st.get("phases") or {}
    total = st.get("total_s") or sum(phases.values()) or 1.0
    rows = [(_PHASE_LABELS.get(name, name), _ms(sec), f"{100 * sec / total:.1f}%") for name, sec in phases.items()]
    rows.append(("total", _ms(total), "100.0%"))
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    for label, ms, share in rows:
        print(f"  {label.ljust(widths[0])}  {ms.rjust(widths[1])}  {share.rjust(widths[2])}", file=out)


def cmd_dump(args) -> int:
    """Print each stage's graph (and, on request, every pass, LLVM IR, assembly and statistics)."""
    from tensorplay.ir.text import print_graph

    out = sys.stdout
    stages = _stages(args)
    chosen = None if args.stage is None else _select_stage(stages, args.stage)
    printed = []
    for s in stages:
        if chosen is not None and s is not chosen:
            continue
        if args.print_after_all:
            for p in s.passes:
                for field, g in p.graphs:
                    suffix = "" if len(p.graphs) == 1 else f" ({field})"
                    print(_banner(f"stage {s.index} > pass {p.name}{suffix}"), file=out)
                    print(print_graph(g), file=out)
                    printed.append(g)
        print(_banner(s.title), file=out)
        print(print_graph(s.graph), file=out)
        printed.append(s.graph)
    _write_resources(printed, args)
    exe = None
    if args.llvm or args.asm or args.stats:
        exe = _compile((chosen or stages[-1]).graph)
    if args.llvm:
        print(_banner("optimised LLVM IR"), file=out)
        print(exe.llvm_ir.rstrip("\n"), file=out)
    if args.asm:
        print(_banner("host assembly"), file=out)
        print(exe.asm.rstrip("\n"), file=out)
    if args.stats:
        _print_stats(out, stages if chosen is None else [chosen], exe)
    return 0


# ----------------------------------------------------------------------------------------------
# run / verify / viz / list
# ----------------------------------------------------------------------------------------------
def cmd_run(args) -> int:
    """Run an IR file on random inputs, or a Python function on its --arg examples, compiled and
    interpreted, and compare (a function is also compared with its eager result)."""
    from .cli_run import compare_outputs, function_run, graph_run

    for name in ("rtol", "atol"):
        value = getattr(args, name)
        if value is not None and not value >= 0:
            raise CLIError(f"--{name} must be a non-negative number, got {value}")
    if _is_ir_file(args.target) or ":" not in args.target:
        if args.arg or args.transform:
            raise CLIError("--arg and --transform apply to MODULE:FUNC targets; an IR file is run on random "
                           "inputs of its own types")
        graph = _parse_ir_file(args.target, args)
        result = graph_run(graph, args.seed, _compile)
    else:
        from .cli_pipeline import transform_def
        from .cli_specs import load_target, parse_tensor_spec

        if not args.arg:
            raise CLIError(f"run {args.target}: give the example arguments with --arg, e.g. --arg f32[8,3]")
        fn = load_target(args.target)
        for t in _specs(args.transform, "transform"):
            fn = transform_def(t).wrap(fn, t.kw)
        result = function_run(fn, [parse_tensor_spec(a) for a in args.arg], args.seed, _compile)
    graph = result.graph
    print(f"@{graph.name}: {len(graph.inputs)} inputs, {len(graph.nodes)} nodes, {len(graph.outputs)} outputs; "
          f"seed {args.seed}")
    print(f"interpreter {_ms(result.interpret_s)}; compile {_ms(result.compile_s)}; "
          f"compiled run {_ms(result.run_s)}")
    failed = 0
    comparisons = [("", result.compiled, result.reference)]
    if result.eager is not None:
        comparisons.append(("eager vs interpreter: ", result.eager, result.reference))
    for label, got, want in comparisons:
        for d in compare_outputs(graph, got, want, args.rtol, args.atol):
            status = "ok" if d.ok else "MISMATCH"
            failed += not d.ok
            print(f"{label}output {d.index} {d.type}: max abs diff {d.max_abs:.3g}, "
                  f"max rel diff {d.max_rel:.3g}: {status}")
    if failed:
        print(f"{PROG}: {failed} output(s) differ beyond tolerance", file=sys.stderr)
        return 1
    return 0


def cmd_opt(args) -> int:
    """Run a comma-separated pass pipeline over an IR file and print the result (as mlir-opt does)."""
    from tensorplay.ir.text import print_graph
    from tensorplay.ir.verify import VerificationError, verify

    from .cli_pipeline import run_pass
    from .cli_specs import split_pipeline

    specs = [spec for text in args.passes or () for spec in split_pipeline(text)]
    graph = _parse_ir_file(args.file, args)
    for spec in specs:
        graph, name = run_pass(graph, spec)
        try:
            verify(graph)
        except VerificationError as e:
            print(f"{PROG}: error: pass {name} produced invalid IR: {_one_line(e)}", file=sys.stderr)
            return 1
        if args.print_ir_after_all:
            print(_banner(f"IR Dump After {spec.text or name}"), file=sys.stderr)
            print(print_graph(graph), file=sys.stderr)
    print(print_graph(graph))
    _write_resources([graph], args)
    return 0


def cmd_verify(args) -> int:
    """Parse and verify IR files; print ``FILE:LINE:COL: error: message`` per problem."""
    from tensorplay.ir.text import parse_graph
    from tensorplay.ir.verify import verify_text

    status = 0
    for path in args.files:
        text = _read(path)
        resources = _load_resources(path, args)
        errors = verify_text(text, resources)
        if not errors:
            g = parse_graph(text, resources)
            if not args.quiet:
                print(f"{_shown(path)}: ok: @{g.name}, {len(g.inputs)} inputs, {len(g.nodes)} nodes, "
                      f"{len(g.outputs)} outputs")
            continue
        status = 1
        for e in errors:
            print(f"{_shown(path)}:{e.line}:{e.column}: error: {e.message}")
            if e.source_line is not None and not args.no_source:
                print(f"  {e.source_line}")
                print(f"  {' ' * (e.column - 1)}^")
    return status


def cmd_viz(args) -> int:
    """Draw one stage of the pipeline to SVG, HTML or DOT."""
    from .viz import write_graph

    suffix = os.path.splitext(args.output)[1].lower()
    if suffix not in (".svg", ".html", ".htm", ".dot", ".gv"):
        raise CLIError(f"cannot tell the output format from {args.output!r}: use a .svg, .html or .dot file name")
    stages = _stages(args)
    stage = _select_stage(stages, args.stage)
    kernels = None
    note = ""
    if args.colour_by in ("auto", "kernel"):
        try:
            kernels = _compile(stage.graph)
        except CLIError as e:
            if args.colour_by == "kernel":
                raise
            note = f" (no kernels: {e}; coloured by op family)"
    stats = {"stage": stage.title}
    if kernels is not None:
        n_k = getattr(kernels, "stats", {}).get("kernels", len(getattr(kernels, "kernels", [])))
        stats["kernels"] = n_k
    try:
        if args.view == "kernels":
            fmt = _write_kernel_view(stage, kernels, args.output, suffix)
        else:
            fmt = write_graph(stage.graph, args.output, kernels=kernels,
                              title=f"@{stage.graph.name} \u2014 {stage.title}", stats=stats)
    except OSError as e:
        raise CLIError(f"cannot write {args.output}: {e.strerror or e}") from None
    print(f"wrote {args.output} ({fmt}, {stage.title}, {len(stage.graph.nodes)} nodes){note}")
    return 0


def _write_kernel_view(stage, kernels, path: str, suffix: str) -> str:
    from .viz import kernel_view_svg

    if suffix != ".svg":
        raise CLIError("--view kernels draws an .svg (the .html page has a kernels button)")
    if kernels is None:
        raise CLIError(f"--view kernels needs the compiled kernels of @{stage.graph.name}")
    svg = kernel_view_svg(stage.graph, kernels=kernels, title=f"@{stage.graph.name} kernels \u2014 {stage.title}",
                          legend=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(svg)
    return "svg, kernel view"


def cmd_list(args) -> int:
    """List the transforms, passes, primitives or ``tp.`` ops the CLI knows."""
    if args.what == "transforms":
        from .cli_pipeline import TRANSFORMS

        for t in TRANSFORMS.values():
            opts = ", ".join(t.options) or "-"
            print(f"{t.name:16} options: {opts:42} {t.doc}")
    elif args.what == "passes":
        from .cli_pipeline import pass_functions

        for name, fn in pass_functions().items():
            doc = (fn.__doc__ or "").strip().split("\n")[0]
            print(f"{name:32} {doc}")
    else:
        if args.what == "ops":
            from . import op_table as table
            markdown, plain, what = table.op_table, table.op_table, "op table"
        else:
            from . import cli_doctable as table
            markdown, plain, what = table.primitive_table, table.rule_matrix, "primitive table"
        if args.update_doc:
            try:
                changed = table.update_doc(args.update_doc)
            except FileNotFoundError:
                raise CLIError(f"no such file: {args.update_doc}") from None
            except ValueError as e:
                raise CLIError(str(e)) from None
            print(f"{args.update_doc}: {what} {'updated' if changed else 'already up to date'}")
        else:
            print(markdown() if args.markdown else plain())
    return 0


# ----------------------------------------------------------------------------------------------
# Parser and entry point
# ----------------------------------------------------------------------------------------------
def _add_pipeline_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("target", help="MODULE:FUNC (a module path or a .py file, then the function) or FILE.tpir "
                                  "('-' reads IR from stdin)")
    p.add_argument("--arg", action="append", metavar="SPEC",
                   help="an example argument of the final function: f32[64,784], i64[3], f32[] (repeatable)")
    p.add_argument("--transform", action="append", metavar="SPEC",
                   help="apply a transform, e.g. grad, 'vmap(in_dims=(None, 0))' (repeatable; applied in order, "
                        "so '--transform grad --transform vmap' is vmap(grad(f)))")
    p.add_argument("--pass", dest="passes", action="append", metavar="SPEC",
                   help="run a pass of ir/passes on the last graph, e.g. simplify or 'batching.batch_graph(...)'")
    p.add_argument("--seed", type=int, default=0, help="seed for the example argument values (default 0)")
    p.add_argument("--stage", metavar="N|final", help="select one stage (0 = traced)")


def _add_resources_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--resources", metavar="FILE.npz",
                   help="elements of the large constants elided from the IR text (default: the IR file's name "
                        "with .npz, read if present, and written beside -o FILE)")


def _add_output_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of standard output ('-': stdout)")
    p.add_argument("--traceback", action="store_true", help=argparse.SUPPRESS)


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("tensorplay")
    except Exception:  # noqa: BLE001 - not installed as a distribution: the package's own version
        import tensorplay

        return tensorplay.__version__


def build_parser() -> argparse.ArgumentParser:
    """The argparse parser of `tensorplay-ir`."""
    parser = _Parser(prog=PROG, description="Inspect tensorplay's graph IR: trace, transform, verify, run and draw.",
                     formatter_class=argparse.RawDescriptionHelpFormatter,
                     epilog="Exit status: 0 ok, 1 invalid IR or mismatching results, 2 bad input.")
    parser.add_argument("--version", action="version", version=f"{PROG} {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    d = sub.add_parser("dump", help="print the graph after tracing, each transform and each pass")
    _add_pipeline_options(d)
    d.add_argument("--print-after-all", action="store_true",
                   help="also print the graph returned by every pass the transforms run")
    d.add_argument("--llvm", action="store_true", help="print the optimised LLVM IR of the final graph")
    d.add_argument("--asm", action="store_true", help="print the host assembly of the final graph")
    d.add_argument("--stats", action="store_true",
                   help="node counts per stage, kernels after fusion, time in tracing, passes, LLVM and codegen")
    _add_output_option(d)
    _add_resources_option(d)
    d.set_defaults(handler=cmd_dump)

    r = sub.add_parser("run", help="run an IR file (random inputs) or MODULE:FUNC (--arg examples) compiled and "
                                   "interpreted, and compare")
    r.add_argument("target", metavar="FILE.tpir|MODULE:FUNC", help="an IR file ('-' for stdin) or a Python function")
    r.add_argument("--arg", action="append", metavar="SPEC", help="MODULE:FUNC: an example argument, e.g. f32[8,3]")
    r.add_argument("--transform", action="append", metavar="SPEC", help="MODULE:FUNC: apply a transform first")
    r.add_argument("--seed", type=int, default=0, help="random seed for the inputs (default 0)")
    r.add_argument("--rtol", type=float, default=None, help="relative tolerance (default: 1e-4 f32, 1e-9 f64)")
    r.add_argument("--atol", type=float, default=None, help="absolute tolerance (default: 1e-5 f32, 1e-12 f64)")
    _add_output_option(r)
    _add_resources_option(r)
    r.set_defaults(handler=cmd_run)

    o = sub.add_parser("opt", help="run a pass pipeline over an IR file and print the result")
    o.add_argument("file", metavar="FILE.tpir", help="an IR file ('-' for stdin)")
    o.add_argument("-p", "--passes", action="append", metavar="PIPELINE",
                   help="comma-separated passes, e.g. 'simplify.cse,dce' or 'batching.batch_graph(in_dims=(0,))' "
                        "(repeatable: pipelines run one after another)")
    o.add_argument("--print-ir-after-all", action="store_true", help="print the IR after every pass (to stderr)")
    _add_output_option(o)
    _add_resources_option(o)
    o.set_defaults(handler=cmd_opt)

    v = sub.add_parser("verify", help="parse and verify IR files")
    v.add_argument("files", nargs="+", metavar="FILE.tpir")
    v.add_argument("-q", "--quiet", action="store_true", help="print nothing for valid files")
    v.add_argument("--no-source", action="store_true", help="do not quote the offending line under each error")
    _add_output_option(v)
    _add_resources_option(v)
    v.set_defaults(handler=cmd_verify)

    z = sub.add_parser("viz", help="draw a graph to .svg, .html or .dot, coloured by fused kernel")
    _add_pipeline_options(z)
    z.add_argument("--traceback", action="store_true", help=argparse.SUPPRESS)
    z.add_argument("-o", "--output", required=True, metavar="OUT", help="graph.svg, graph.html or graph.dot")
    z.add_argument("--colour-by", "--color-by", dest="colour_by", choices=("auto", "kernel", "family"),
                   default="auto", help="fill nodes by fused kernel or by op family (default: kernel if possible)")
    z.add_argument("--view", choices=("ops", "kernels"), default="ops",
                   help="ops: one box per IR node; kernels: one box per fused kernel, with the buffers between "
                        "them and their sizes (.svg)")
    _add_resources_option(z)
    z.set_defaults(handler=cmd_viz)

    li = sub.add_parser("list", help="list transforms, passes, primitives or tp. ops")
    li.add_argument("what", choices=("transforms", "passes", "prims", "ops"))
    li.add_argument("--markdown", action="store_true", help="prims: print the Markdown table of docs/ir.md")
    li.add_argument("--update-doc", metavar="FILE.md",
                    help="prims/ops: rewrite the generated table in FILE.md (docs/ir.md, docs/ops.md)")
    _add_output_option(li)
    li.set_defaults(handler=cmd_list)
    return parser


def _one_line(e: BaseException) -> str:
    text = str(e).strip()
    first = text.split("\n", 1)[0].strip() if text else ""
    return first or type(e).__name__


@contextlib.contextmanager
def _output(args):
    """Standard output goes to ``-o FILE`` (all subcommands but viz, whose -o is the drawing)."""
    path = getattr(args, "output", None)
    if args.handler is cmd_viz or path in (None, "-"):
        yield
        return
    try:
        f = open(path, "w", encoding="utf-8")  # noqa: SIM115 - closed below
    except OSError as e:
        raise CLIError(f"cannot write {path}: {e.strerror or e}") from None
    with f, contextlib.redirect_stdout(f):
        yield


def main(argv: Sequence[str] | None = None) -> int:
    """Run `tensorplay-ir` with `argv` (default: ``sys.argv[1:]``); return the exit status."""
    from tensorplay.ir.text import ParseError

    from .cli_specs import SpecError

    parser = build_parser()
    show_traceback = "--traceback" in (argv if argv is not None else sys.argv[1:])
    try:
        args = parser.parse_args(argv)
        with _output(args):
            status = args.handler(args)
            sys.stdout.flush()
        return status
    except CLIError as e:
        print(f"{PROG}: error: {_one_line(e)}", file=sys.stderr)
        return e.status
    except (SpecError, ParseError) as e:
        print(f"{PROG}: error: {_one_line(e)}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        try:
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - silence the interpreter's flush at exit
        except OSError:
            pass
        return 0
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # noqa: BLE001 - user code and transforms raise anything; one line, exit 2
        if show_traceback:
            traceback.print_exc()
        print(f"{PROG}: error: {type(e).__name__}: {_one_line(e)}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
