"""The torch API probe (tools/torch_api_probe.py): its counting, lookups and comparisons, and the coverage floor."""
from __future__ import annotations

import doctest
import math
from collections import Counter

import pytest

from tensorplay.tools import torch_api_probe as probe_mod
from tensorplay.tools.torch_api_probe import USAGE, apis, probe, weight


def test_docstring_examples():
    result = doctest.testmod(probe_mod, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0


def test_weight_is_one_plus_log2_of_uses():
    assert [weight(n) for n in (0, 1, 3, 7)] == [1.0, 2.0, 3.0, 4.0]
    assert weight(100) == pytest.approx(1 + math.log2(101))


def test_api_list_is_unique_and_ordered_by_use():
    names = apis()
    assert len(names) == len(set(names)) > 500
    counted = [n for n in names if n in USAGE]
    assert [USAGE[n] for n in counted] == sorted((USAGE[n] for n in counted), reverse=True)
    assert {"torch.func.vmap", "torch.func.functional_call", "Tensor.backward", "torch.utils.data.DataLoader"} <= set(names)


def test_probe_counts_and_weights_by_hand():
    r = probe(["torch.sin", "torch.no_such_op", "Tensor.view", "Tensor.no_such_method"])
    assert (r.found, r.total) == (2, 4)
    w = [weight(USAGE.get(n, 0)) for n in ("torch.sin", "torch.no_such_op", "Tensor.view", "Tensor.no_such_method")]
    assert r.weighted == pytest.approx((w[0] + w[2]) / sum(w))
    assert [m[0] for m in r.missing] == ["Tensor.no_such_method", "torch.no_such_op"]


def test_signature_comparison_finds_a_missing_parameter_name():
    pytest.importorskip("torch")
    ours = lambda input, dim: None  # noqa: E731
    theirs = probe_mod._param_names(lambda input, dim, keepdim=False, *, out=None: None, "f")
    assert probe_mod._lacking(theirs, probe_mod._param_names(ours, "f")) == ["keepdim"]  # `out` is ignored
    assert probe_mod._lacking(theirs, probe_mod._param_names(lambda *a, **k: None, "f")) == []
    # a torch builtin's docstring signature: ``*size`` is matched by our ``*size``
    import torch

    zeros = probe_mod._param_names(torch.zeros, "zeros")
    assert "size" in zeros[0] and zeros[1] == "size"
    assert probe_mod._lacking(zeros, probe_mod._param_names(lambda *size, dtype=None, requires_grad=False, device=None,
                                                            names=None: None, "zeros")) == []


def test_corpus_scan_resolves_import_aliases(tmp_path):
    pytest.importorskip("torch")
    (tmp_path / "a.py").write_text(
        "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\nfrom torch.utils.data import DataLoader\n"
        "x = torch.randn(3)\nm = nn.Linear(3, 2)\ny = F.relu(m(x)).sum()\ny.backward()\ny.backward()\n"
        "loader = DataLoader([1, 2])\nd = {}\nd.items(); d.items()\n")
    (tmp_path / "b.py").write_text("import numpy as np\nnp.zeros(3)\n")  # no torch: not counted
    usage = probe_mod.scan_corpus(str(tmp_path))
    assert usage == Counter({"torch.randn": 1, "torch.nn.Linear": 1, "torch.nn.functional.relu": 1,
                             "torch.utils.data.DataLoader": 1, "Tensor.backward": 2})


def test_main_prints_the_figures(capsys):
    assert probe_mod.main(["--missing"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("APIs probed: ") and "weighted by use" in out


def test_weighted_coverage_meets_the_issue_16_target():
    r = probe()
    assert r.weighted >= 0.95, f"probe weighted coverage {100 * r.weighted:.1f} % < 95 %; missing: {r.missing[:10]}"
