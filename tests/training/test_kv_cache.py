"""training/kv_cache.py: a cached forward under the installed transformers' own keyword, the same numbers as
the uncached one, and no deprecation warning about ``past_key_values``."""

from __future__ import annotations

import warnings

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytestmark = pytest.mark.train   # CI's training venv (transformers 5.6); a [cpu] venv (5.24) runs it with -m train too

from envsim.training.kv_cache import cache_keyword, returned_cache, with_cache  # noqa: E402
from envsim.training.tiny_model import build_tiny_model  # noqa: E402


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    from transformers import AutoModelForCausalLM

    out = tmp_path_factory.mktemp("kv") / "model"
    build_tiny_model(out, ["a tiny corpus of tool calls", "state changes and observations"] * 20, vocab_size=300)
    return AutoModelForCausalLM.from_pretrained(out, dtype=torch.float32).eval()


def test_decoding_on_the_returned_cache_gives_the_uncached_logits_without_a_deprecation_warning(model):
    ids = torch.tensor([[5, 17, 42, 9, 3, 77, 12]])
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("error")          # a FutureWarning about the keyword fails the test
        whole = model(ids, use_cache=False).logits
        first = model(ids[:, :4], use_cache=True)
        cache = returned_cache(first)
        rest = model(ids[:, 4:], use_cache=True, **with_cache(model, cache)).logits
        inner = model.model(ids[:, 4:5], use_cache=True, **with_cache(model.model, returned_cache(
            model.model(ids[:, :4], use_cache=True)))).last_hidden_state
    assert torch.allclose(torch.cat([first.logits, rest], dim=1), whole, atol=1e-5)
    assert torch.allclose(model.lm_head(inner), whole[:, 4:5], atol=1e-5)


def test_the_keyword_is_the_one_the_forward_declares(model):
    import inspect

    for module in (model, model.model):
        declared = inspect.signature(module.forward).parameters
        assert cache_keyword(module) in declared
        assert with_cache(module, "x") == {cache_keyword(module): "x"}
