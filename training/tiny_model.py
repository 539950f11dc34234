"""Tiny local models for tests and CPU smoke runs: a byte-level BPE tokenizer trained with
``tokenizers`` on our own prompts and a tiny Qwen3-architecture model, saved like any local model
directory (config, safetensors weights, tokenizer with a chat template). Nothing is downloaded."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>", "<tool_call>", "</tool_call>"]
CHAT_TEMPLATE = ("{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
                 "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


def texts_from_sft(path: Path) -> list[str]:
    """Every message text of an SFT JSONL file (tokenizer training corpus)."""
    texts = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            texts += [m["content"] for m in json.loads(line)["messages"]]
    return texts


def build_tiny_model(out_dir: Path, texts: Iterable[str], *, vocab_size: int = 2000, hidden_size: int = 64,
                     layers: int = 2, heads: int = 4, kv_heads: int = 2, seed: int = 0,
                     tie_embeddings: bool = True) -> dict[str, int]:
    """Train the tokenizer on ``texts``, initialise a tiny Qwen3 model and save both to ``out_dir``.

    ``tie_embeddings=False`` gives the model its own output layer: training only its last layers (the CPU SFT
    loop) then trains that layer too, where a tied one would stay at its random initialisation."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIAL_TOKENS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train_from_iterator(list(texts), trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    fast.chat_template = CHAT_TEMPLATE
    out_dir.mkdir(parents=True, exist_ok=True)
    fast.save_pretrained(out_dir)
    torch.manual_seed(seed)
    config = Qwen3Config(vocab_size=len(fast), hidden_size=hidden_size, intermediate_size=2 * hidden_size,
                         num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=kv_heads,
                         head_dim=hidden_size // heads, max_position_embeddings=16384, tie_word_embeddings=tie_embeddings,
                         eos_token_id=fast.convert_tokens_to_ids("<|im_end|>"),
                         pad_token_id=fast.convert_tokens_to_ids("<|endoftext|>"))
    model = Qwen3ForCausalLM(config)
    model.save_pretrained(out_dir)
    return {"vocab_size": len(fast), "parameters": sum(p.numel() for p in model.parameters())}
