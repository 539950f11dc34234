"""Issue 54, finding 14 (templates): a GGUF whose chat template hangs, exhausts memory, raises or blows up the
prompt is refused before ``envsim serve --backend llama.cpp`` starts a server, with the class named and no
traceback; real chat templates pass.

The GGUFs are metadata-only files written here with the ``gguf`` package (no weights, nothing downloaded); the
probe renders with llama-cpp-python's own formatter, so these tests need both (skipped without)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from click.testing import CliRunner

from envsim.cli import main
from envsim.training import gguf_convert, serve
from envsim.training.tiny_model import CHAT_TEMPLATE

pytestmark = pytest.mark.skipif(not (importlib.util.find_spec("gguf") and importlib.util.find_spec("llama_cpp")),
                                reason="needs the gguf package and llama-cpp-python (the [cpu-serve] extra)")

#: A Qwen-style template written for this test: a default system turn, tool calls as JSON, a generation prompt.
QWEN_STYLE = (
    "{% if messages[0]['role'] != 'system' %}<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n{% endif %}"
    "{% for message in messages %}{% if message['role'] == 'assistant' and message.tool_calls is defined %}"
    "<|im_start|>assistant\n{% for call in message.tool_calls %}<tool_call>\n{{ call | tojson }}\n</tool_call>"
    "{% endfor %}<|im_end|>\n{% else %}<|im_start|>{{ message['role'] }}\n{{ message['content'] | trim }}"
    "<|im_end|>\n{% endif %}{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")

HOSTILE = {
    "time": "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
    "memory": "{{ 'x' * 10**10 }}",
    "memory-joins": ("{% set a = 'x' * 1000000 %}{% set b = [a, a, a, a, a, a, a, a, a, a] | join %}"
                     "{% set c = [b, b, b, b, b, b, b, b, b, b] | join %}{{ [c, c, c, c, c, c, c, c, c, c] | join }}"),
    "raised": "{{ raise_exception('only user turns, please') }}",
    "output": "{% for m in messages %}{% for i in range(1000) %}{{ m['content'] }}{% endfor %}{% endfor %}",
}


def tiny_gguf(path: Path, template: str | None) -> Path:
    """A GGUF holding only metadata: a three-token vocabulary and, unless ``None``, ``template``."""
    from gguf import GGUFWriter

    writer = GGUFWriter(str(path), "llama")
    if template is not None:
        writer.add_chat_template(template)
    writer.add_token_list(["<|endoftext|>", "<|im_end|>", "a"])
    writer.add_bos_token_id(0)
    writer.add_eos_token_id(1)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def start_refused(monkeypatch, gguf: Path) -> str:
    """``start_server`` on ``gguf`` with the server's launch replaced by a failure; the refusal's message."""
    launched = []
    monkeypatch.setattr(serve, "llama_cpp_available", lambda: True)
    monkeypatch.setattr(gguf_convert, "gguf_for", lambda model, quantize, progress=None: gguf)
    monkeypatch.setattr(serve, "refuse_taken_port", lambda host, port: None)
    monkeypatch.setattr(serve, "_launch", lambda *a: launched.append(a) or pytest.fail("the server was started"))
    with pytest.raises(serve.ServerStartFailed) as refused:
        serve.start_server(str(gguf), "llama.cpp", port=8000, ready_timeout=5)
    assert not launched
    return str(refused.value)


@pytest.mark.parametrize("name", list(HOSTILE))
def test_a_hostile_template_is_refused_before_the_server_starts_naming_its_class(tmp_path, monkeypatch, name):
    message = start_refused(monkeypatch, tiny_gguf(tmp_path / f"{name}.gguf", HOSTILE[name]))
    assert f"refused ({name.split('-')[0]})" in message and str(tmp_path) in message
    if name == "raised":
        assert "only user turns, please" in message


@pytest.mark.parametrize("template", [CHAT_TEMPLATE, QWEN_STYLE, None], ids=["tiny-model", "qwen-style", "none"])
def test_real_templates_and_none_pass_the_probe(tmp_path, template):
    from envsim.training.chat_template_probe import PROBE_SIZES, check_chat_template

    verdict = check_chat_template(tiny_gguf(tmp_path / "ok.gguf", template))
    assert verdict.refusal is None, verdict.detail
    if template is not None:  # four conversations rendered, each a little longer than its text
        assert len(verdict.rendered) == 4 and min(verdict.rendered) >= PROBE_SIZES[0]
        assert max(verdict.rendered) >= PROBE_SIZES[1]


def test_a_file_whose_metadata_cannot_be_read_is_refused(tmp_path):
    from envsim.training.chat_template_probe import check_chat_template

    bogus = tmp_path / "bogus.gguf"
    bogus.write_bytes(b"GGUF" + b"\xff" * 64)
    verdict = check_chat_template(bogus)
    assert verdict.refusal == "unreadable" and "bogus.gguf" in verdict.message(bogus)


def test_envsim_serve_exits_non_zero_on_a_hostile_gguf_without_a_traceback(tmp_path, monkeypatch):
    gguf = tiny_gguf(tmp_path / "raises.gguf", HOSTILE["raised"])
    monkeypatch.setattr(serve, "_launch", lambda *a: pytest.fail("the server was started"))
    monkeypatch.setattr(serve, "refuse_taken_port", lambda host, port: None)
    result = CliRunner().invoke(main, ["serve", "--model", str(gguf), "--backend", "llama.cpp", "--port", "8000"])
    assert result.exit_code != 0 and "refused (raised)" in result.output, result.output
    assert "Traceback" not in result.output and result.exception is None or isinstance(result.exception, SystemExit)


def test_a_template_that_passed_is_not_probed_again_for_the_same_template_files(tmp_path, monkeypatch):
    """GRPO serves every weight sync of one checkpoint folder anew: the same template files are probed once per
    process, a changed template file is probed again, and a hostile one is still refused."""
    checkpoint = tmp_path / "policy"
    checkpoint.mkdir()
    (checkpoint / "tokenizer_config.json").write_text('{"chat_template": "%s"}' % "{{ messages[0]['content'] }}")
    good, bad = tiny_gguf(tmp_path / "good.gguf", QWEN_STYLE), tiny_gguf(tmp_path / "bad.gguf", HOSTILE["raised"])
    served = {"gguf": good}
    probed, started = [], []
    real_check = __import__("envsim.training.chat_template_probe", fromlist=["check_chat_template"]).check_chat_template
    monkeypatch.setattr("envsim.training.chat_template_probe.check_chat_template",
                        lambda gguf: probed.append(gguf) or real_check(gguf))
    monkeypatch.setattr(serve, "_PASSED_TEMPLATE_SOURCES", set())
    monkeypatch.setattr(serve, "llama_cpp_available", lambda: True)
    monkeypatch.setattr(gguf_convert, "gguf_for", lambda model, quantize, progress=None: served["gguf"])
    monkeypatch.setattr(serve, "refuse_taken_port", lambda host, port: None)
    monkeypatch.setattr(serve, "_launch", lambda *a: started.append(a))
    for _ in range(3):
        serve.start_server(str(checkpoint), "llama.cpp", port=8000, ready_timeout=5)
    assert len(started) == 3 and probed == [good]                       # probed once, served three times
    (checkpoint / "tokenizer_config.json").write_text('{"chat_template": "changed"}')
    served["gguf"] = bad
    with pytest.raises(serve.ServerStartFailed, match=r"refused \(raised\)"):
        serve.start_server(str(checkpoint), "llama.cpp", port=8000, ready_timeout=5)
    assert probed == [good, bad] and len(started) == 3
    assert serve.template_source_digest(str(good)) is None               # a .gguf given as it is: always probed
