"""Write a random-weight llama-architecture GGUF with llama.cpp's own ``gguf`` package.

For measuring where no model can be downloaded (a lent GPU machine that reaches no
registry): the weights are random, so the text is noise and the output check fails,
but the tensor shapes, and so the work per token, are a real model's (the defaults
are TinyLlama 1.1B's). The end-of-text row of the output matrix is zero, so its
logit stays 0 while the others spread: generations run to ``max_tokens``.

    python benchmarks/make_random_gguf.py /tmp/random-1.1b-f16.gguf
"""

from __future__ import annotations

import argparse
from pathlib import Path

import gguf
import numpy as np

SPECIALS = ["<unk>", "<s>", "</s>"]


def vocabulary(size: int) -> tuple[list[str], list[int]]:
    """Return SentencePiece-style tokens and their types: specials, the 256 byte tokens, made-up pieces."""
    tokens = SPECIALS + [f"<0x{b:02X}>" for b in range(256)]
    types = [gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL, gguf.TokenType.CONTROL] + [gguf.TokenType.BYTE] * 256
    pieces = size - len(tokens)
    tokens += [f"\u2581w{i}" for i in range(pieces)]
    types += [gguf.TokenType.NORMAL] * pieces
    return tokens, [int(t) for t in types]


def write_model(
    path: Path, *, n_embd: int, n_layer: int, n_ff: int, n_head: int, n_head_kv: int, n_vocab: int, seed: int
) -> int:
    """Write the model to ``path``; return its size in bytes."""
    rng = np.random.default_rng(seed)
    head_dim = n_embd // n_head

    def weight(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape, dtype=np.float32) * 0.02).astype(np.float16)

    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name(f"random-llama-{n_layer}L-{n_embd}d (benchmark weights, not a model)")
    writer.add_context_length(4096)
    writer.add_embedding_length(n_embd)
    writer.add_block_count(n_layer)
    writer.add_feed_forward_length(n_ff)
    writer.add_head_count(n_head)
    writer.add_head_count_kv(n_head_kv)
    writer.add_rope_dimension_count(head_dim)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    tokens, types = vocabulary(n_vocab)
    writer.add_tokenizer_model("llama")
    writer.add_token_list(tokens)
    writer.add_token_scores([0.0] * len(tokens))
    writer.add_token_types(types)
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    writer.add_unk_token_id(0)
    writer.add_chat_template("{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}{% endfor %}<|assistant|>")

    ones = np.ones(n_embd, dtype=np.float32)
    writer.add_tensor("token_embd.weight", weight(n_vocab, n_embd))
    for i in range(n_layer):
        writer.add_tensor(f"blk.{i}.attn_norm.weight", ones)
        writer.add_tensor(f"blk.{i}.attn_q.weight", weight(n_embd, n_embd))
        writer.add_tensor(f"blk.{i}.attn_k.weight", weight(n_head_kv * head_dim, n_embd))
        writer.add_tensor(f"blk.{i}.attn_v.weight", weight(n_head_kv * head_dim, n_embd))
        writer.add_tensor(f"blk.{i}.attn_output.weight", weight(n_embd, n_embd))
        writer.add_tensor(f"blk.{i}.ffn_norm.weight", ones)
        writer.add_tensor(f"blk.{i}.ffn_gate.weight", weight(n_ff, n_embd))
        writer.add_tensor(f"blk.{i}.ffn_up.weight", weight(n_ff, n_embd))
        writer.add_tensor(f"blk.{i}.ffn_down.weight", weight(n_embd, n_ff))
    writer.add_tensor("output_norm.weight", ones)
    output = weight(n_vocab, n_embd)
    output[2] = 0  # end of text never wins
    writer.add_tensor("output.weight", output)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path.stat().st_size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("path", type=Path)
    parser.add_argument("--n-embd", type=int, default=2048)
    parser.add_argument("--n-layer", type=int, default=22)
    parser.add_argument("--n-ff", type=int, default=5632)
    parser.add_argument("--n-head", type=int, default=32)
    parser.add_argument("--n-head-kv", type=int, default=4)
    parser.add_argument("--n-vocab", type=int, default=32000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    size = write_model(
        args.path,
        n_embd=args.n_embd,
        n_layer=args.n_layer,
        n_ff=args.n_ff,
        n_head=args.n_head,
        n_head_kv=args.n_head_kv,
        n_vocab=args.n_vocab,
        seed=args.seed,
    )
    print(f"wrote {args.path} ({size / 2**20:.1f} MiB, {args.n_layer} layers)")


if __name__ == "__main__":
    main()
