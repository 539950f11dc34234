"""Completion generators of the CPU GRPO loop (``training.grpo_cpu``).

* ``TorchGenerator``: ``generate`` on the policy itself (exactly on-policy, slow on CPU: ~80 ms per token for
  SmolLM2-135M on one thread);
* ``EndpointGenerator``: an OpenAI-compatible ``/chat/completions`` endpoint (llama.cpp serving a converted
  copy of the policy). It asks for plain ancestral sampling (``top_p`` 1, ``top_k`` 0, ``min_p`` 0, no repeat
  penalty: llama-cpp-python's defaults would otherwise sample from another distribution than the policy's) and
  for ``logprobs``; when the answer carries per-token log-probabilities whose pieces map back to the policy
  tokenizer's ids, those are the behaviour log-probs of the sampled tokens (``Completion.behaviour_logprobs``).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Protocol


@dataclass
class Completion:
    """One sampled completion: its text, the policy tokenizer's ids of it (EOS appended when it stopped by
    itself) and, when the generator reported them, one behaviour log-prob per id (``None`` where unknown)."""

    text: str
    token_ids: list[int]
    finished: bool
    behaviour_logprobs: list[float | None] | None = None


class Generator(Protocol):
    """Samples ``n`` completions of one chat prompt."""

    def sample(self, messages: list[dict[str, str]], n: int) -> list[Completion]:
        """``n`` completions of ``messages``."""


def prompt_ids(tokenizer: Any, messages: list[dict[str, str]]) -> list[int]:
    """Token ids of the chat prompt with the generation prompt (the chat template renders the special tokens)."""
    text = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


class TorchGenerator:
    """Samples with ``model.generate`` (the current weights: exact on-policy)."""

    def __init__(self, model: Any, tokenizer: Any, max_new_tokens: int, temperature: float) -> None:
        self.model, self.tokenizer = model, tokenizer
        self.max_new_tokens, self.temperature = max_new_tokens, temperature

    def sample(self, messages: list[dict[str, str]], n: int) -> list[Completion]:
        """``n`` completions, sampled in one padded batch (one prompt repeated ``n`` times: no padding)."""
        import torch

        ids = torch.tensor([prompt_ids(self.tokenizer, messages)])
        eos = self.tokenizer.eos_token_id
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else eos
        was_training = self.model.training
        self.model.eval()
        with torch.no_grad():
            out = self.model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=True,
                                      temperature=self.temperature, top_k=0, top_p=1.0,
                                      max_new_tokens=self.max_new_tokens, num_return_sequences=n,
                                      eos_token_id=eos, pad_token_id=pad)
        self.model.train(was_training)
        completions = []
        for row in out[:, ids.shape[1]:].tolist():
            finished = eos in row
            kept = row[: row.index(eos) + 1] if finished else row
            text = self.tokenizer.decode(kept[:-1] if finished else kept, skip_special_tokens=True)
            completions.append(Completion(text, kept, finished))
        return completions


@lru_cache(maxsize=1)
def byte_level_table() -> dict[int, str]:
    """GPT-2's byte-level BPE alphabet: each byte's printable stand-in in the vocabulary (``bytes_to_unicode``)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    table, extra = {b: chr(b) for b in printable}, 0
    for b in range(256):
        if b not in table:
            table[b] = chr(256 + extra)
            extra += 1
    return table


def _byte_level_piece(raw: bytes) -> str:
    """A GPT-2 byte-level BPE token string for ``raw`` (the vocabulary's spelling of those bytes)."""
    table = byte_level_table()
    return "".join(table[b] for b in raw)


def ids_from_pieces(tokenizer: Any, pieces: list[dict[str, Any]], text: str) -> list[int] | None:
    """The policy tokenizer's ids of the sampled tokens, from the endpoint's ``logprobs.content`` entries (their
    ``bytes``, else ``token`` text), or ``None`` when they do not map one to one or do not spell ``text``."""
    unknown = getattr(tokenizer, "unk_token_id", None)
    ids = []
    for piece in pieces:
        raw = bytes(piece["bytes"]) if piece.get("bytes") else str(piece.get("token", "")).encode("utf-8")
        if not raw:
            return None
        token_id = tokenizer.convert_tokens_to_ids(_byte_level_piece(raw))
        if token_id is None or (unknown is not None and token_id == unknown):
            return None
        ids.append(int(token_id))
    return ids if tokenizer.decode(ids, skip_special_tokens=False) == text else None


def llama_cpp_response_format(field: dict[str, Any] | None) -> dict[str, Any] | None:
    """OpenAI's ``{"type": "json_schema", "json_schema": {"schema": ...}}`` in the form llama-cpp-python's server
    accepts (it validates ``type`` as ``text`` or ``json_object`` and takes the schema from ``schema``), empty
    schemas spelled out as the serving shim does (``llama_cpp_server.explicit_any``: ``{}`` would decode as an
    object only)."""
    from envsim.training.llama_cpp_server import explicit_any

    if field is None or field.get("type") != "json_schema":
        return field
    return {"type": "json_object", "schema": explicit_any(field["json_schema"]["schema"])}


class EndpointGenerator:
    """Samples from an OpenAI-compatible endpoint (one request per completion: llama.cpp's server has no ``n``)."""

    def __init__(self, base_url: str, model: str, tokenizer: Any, max_new_tokens: int, temperature: float,
                 response_format: dict[str, Any] | None = None, timeout: float = 900.0, seed: int = 0) -> None:
        self.base_url, self.model, self.tokenizer = base_url.rstrip("/"), model, tokenizer
        self.max_new_tokens, self.temperature = max_new_tokens, temperature
        self.response_format, self.timeout, self.seed = response_format, timeout, seed
        self.requests = 0
        self.want_logprobs = True       # ask for behaviour log-probs (the caller turns it off where not needed)
        self.logprobs_refused = False   # the server answered an error to a log-prob request: not asked again

    def request_body(self, messages: list[dict[str, str]], logprobs: bool = True) -> dict[str, Any]:
        """The chat-completions body: plain sampling at the policy's temperature, with log-probs when
        ``logprobs`` (llama-cpp-python returns them only with ``top_logprobs`` set, and only when its server
        keeps all logits, ``logits_all``, its default)."""
        body: dict[str, Any] = {"model": self.model, "messages": messages, "max_tokens": self.max_new_tokens,
                                "temperature": self.temperature, "top_p": 1.0, "top_k": 0, "min_p": 0.0,
                                "repeat_penalty": 1.0, "presence_penalty": 0.0, "frequency_penalty": 0.0,
                                "seed": self.seed + self.requests}
        if logprobs:
            body.update(logprobs=True, top_logprobs=1)
        if self.response_format is not None:
            body["response_format"] = self.response_format
        return body

    def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        request = urllib.request.Request(f"{self.base_url}/chat/completions", data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=self.timeout) as response:
            return json.loads(response.read())

    def sample(self, messages: list[dict[str, str]], n: int) -> list[Completion]:
        """``n`` completions, one request each."""
        completions = []
        for _ in range(n):
            logprobs = self.want_logprobs and not self.logprobs_refused
            self.requests += 1
            try:
                answer = self._post(self.request_body(messages, logprobs))
            except urllib.error.HTTPError:
                if not logprobs:
                    raise
                self.logprobs_refused = True            # e.g. "logprobs is not supported ... logits_all=False"
                answer = self._post(self.request_body(messages, False))
            completions.append(self.completion(answer["choices"][0]))
        return completions

    def completion(self, choice: dict[str, Any]) -> Completion:
        """A ``Completion`` from one answer choice: behaviour log-probs when its pieces map to our ids, else the
        text re-tokenized (log-probs unknown)."""
        text = str((choice.get("message") or {}).get("content") or "")
        finished = choice.get("finish_reason") == "stop"
        pieces = ((choice.get("logprobs") or {}).get("content")) or []
        ids = ids_from_pieces(self.tokenizer, pieces, text) if pieces else None
        behaviour: list[float | None] | None = None
        if ids is not None:
            behaviour = [float(p["logprob"]) if p.get("logprob") is not None else None for p in pieces]
        else:
            ids = list(self.tokenizer(text, add_special_tokens=False)["input_ids"])
        if finished and self.tokenizer.eos_token_id is not None:
            ids = [*ids, self.tokenizer.eos_token_id]
            if behaviour is not None:
                behaviour.append(None)          # the stop token's log-prob is not reported
        return Completion(text, ids, finished, behaviour)
