"""Builds the load ladder's models on the GPU host (issue #31): a target of Llama-3-8B's shape and
size and a drafter made of its first layers, with acceptance in the usual range.

  target  LlamaForCausalLM, Llama-3-8B's shape (32 layers, hidden 4096, MLP 14336, 32 heads,
          8 KV heads, bf16) with the kit tokenizer's vocabulary of 8000: 7.05 B parameters.
          Random weights cost what trained ones cost; what makes a drafter agree is built in:
          the later layers (DRAFT_LAYERS..31) add little to the residual stream (their output
          projections scaled by EPSILON), so the first layers decide most next tokens.
  draft   the target's first DRAFT_LAYERS layers (2 by default: 0.50 B parameters, 1/16 of the
          target's layers), with its embedding, final norm and LM head: a real drafter's cost.

EPSILON is searched (bisection on a log scale) until the drafter's expected acceptance length at
k = 4, measured teacher-forced on the target's own greedy continuations of the ladder's prompts
(the run of agreeing positions from each position, capped at k), is TARGET_L (default 3.0). The
search runs the target in plain PyTorch on the GPU (no vLLM) and takes a few seconds.

  python3 build_models.py [--out /tmp/models] [--tokenizer DIR] [--draft-layers 2] [--target-l 3.0]
Writes OUT/ladder-target, OUT/ladder-draft (config.json, safetensors, tokenizer) and
OUT/ladder-build.json (the choices and the measured agreement). Needs torch, transformers and
safetensors (the GPU host's image)."""
import argparse
import json
import math
import os
import sys
import time

import torch
from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from prompts import PROMPTS  # noqa: E402  (the ladder's prompts: the same text the load sends)

SHAPE = {"hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
         "num_key_value_heads": 8, "max_position_embeddings": 8192, "rope_theta": 500000.0, "rms_norm_eps": 1e-5}


def config(tok, layers):
    cfg = LlamaConfig(vocab_size=len(tok), **{**SHAPE, "num_hidden_layers": layers}, tie_word_embeddings=False,
                      bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, pad_token_id=None,
                      initializer_range=0.02)
    cfg.dtype = "bfloat16"
    return cfg


@torch.no_grad()
def shape_target(model, draft_layers, attn_gain, mlp_gain, seed):
    """Embedding N(0, 1) (token identity dominates the stream at first), the first layers adding
    about half of it each, LM head N(0, 0.02); the output projections of the later layers are set
    by scale_late()."""
    g = torch.Generator(device=model.lm_head.weight.device).manual_seed(seed)
    model.model.embed_tokens.weight.normal_(0.0, 1.0, generator=g)
    for name, p in model.named_parameters():
        if p.dim() >= 2 and "embed_tokens" not in name:
            p.normal_(0.0, 0.02, generator=g)
    for layer in model.model.layers:
        layer.self_attn.o_proj.weight.mul_(attn_gain)
        layer.mlp.down_proj.weight.mul_(mlp_gain)
    model.base_o = [layer.self_attn.o_proj.weight.clone() for layer in model.model.layers[draft_layers:]]
    model.base_down = [layer.mlp.down_proj.weight.clone() for layer in model.model.layers[draft_layers:]]


@torch.no_grad()
def scale_late(model, draft_layers, epsilon):
    for layer, o, down in zip(model.model.layers[draft_layers:], model.base_o, model.base_down, strict=True):
        layer.self_attn.o_proj.weight.copy_(o * epsilon)
        layer.mlp.down_proj.weight.copy_(down * epsilon)


@torch.no_grad()
def greedy(model, ids, steps):
    out = model(input_ids=ids, use_cache=True)
    tokens = []
    past = out.past_key_values
    nxt = out.logits[:, -1].argmax(-1, keepdim=True)
    for _ in range(steps):
        tokens.append(nxt)
        out = model(input_ids=nxt, past_key_values=past, use_cache=True)
        past = out.past_key_values
        nxt = out.logits[:, -1].argmax(-1, keepdim=True)
    return torch.cat(tokens, dim=1)


@torch.no_grad()
def expected_length(target, draft, ids, steps, k):
    """E[1 + min(run, k)]: the run of positions where the drafter's argmax, given the target's own
    greedy prefix, equals the target's token (what verification accepts), from every position."""
    gen = greedy(target, ids, steps)
    full = torch.cat([ids, gen], dim=1)
    pred = draft(input_ids=full).logits[:, ids.shape[1] - 1:-1].argmax(-1)
    agree = (pred == gen).float().cpu()
    runs = torch.zeros_like(agree)
    run = torch.zeros(agree.shape[0])
    for t in range(agree.shape[1] - 1, -1, -1):  # run length of agreement starting at t
        run = (run + 1) * agree[:, t]
        runs[:, t] = run
    usable = runs[:, : steps - k]
    per_position = [(usable >= i + 1).float().mean().item() for i in range(k)]
    return 1.0 + usable.clamp(max=k).mean().item(), agree.mean().item(), per_position


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.environ.get("MODELS", "/tmp/models"))
    ap.add_argument("--tokenizer", default=os.environ.get("TOKENIZER", "/tmp/stage/kit/tokenizer"))
    ap.add_argument("--draft-layers", type=int, default=2)
    ap.add_argument("--target-l", type=float, default=3.0, help="expected acceptance length at k = 4 (default 3.0)")
    ap.add_argument("--attn-gain", type=float, default=0.5)
    ap.add_argument("--mlp-gain", type=float, default=0.25)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--shape", help="JSON overriding the target's shape (a dry run on CPU: a tiny model)")
    a = ap.parse_args()
    if a.shape:
        SHAPE.update(json.loads(a.shape))
    t0 = time.time()
    torch.set_default_dtype(torch.bfloat16)
    tok = AutoTokenizer.from_pretrained(a.tokenizer)
    with torch.device(a.device):
        target = LlamaForCausalLM(config(tok, SHAPE["num_hidden_layers"])).eval()
        draft = LlamaForCausalLM(config(tok, a.draft_layers)).eval()
    shape_target(target, a.draft_layers, a.attn_gain, a.mlp_gain, a.seed)
    with torch.no_grad():
        draft.model.embed_tokens.weight.copy_(target.model.embed_tokens.weight)
        draft.model.norm.weight.copy_(target.model.norm.weight)
        draft.lm_head.weight.copy_(target.lm_head.weight)
        for mine, theirs in zip(draft.model.layers, target.model.layers, strict=False):
            mine.load_state_dict(theirs.state_dict())
    encoded = [tok(text, add_special_tokens=True)["input_ids"] for _, text in PROMPTS]
    width = min(32, min(len(ids) for ids in encoded))
    ids = torch.tensor([ids[:width] for ids in encoded], device=a.device)
    low, high = math.log(1e-3), math.log(50.0)
    trace = []
    for _ in range(10):
        mid = (low + high) / 2
        scale_late(target, a.draft_layers, math.exp(mid))
        length, agree, per_position = expected_length(target, draft, ids, 96, 4)
        trace.append({"epsilon": round(math.exp(mid), 5), "L_k4": round(length, 3), "agreement": round(agree, 3),
                      "per_position": [round(x, 3) for x in per_position]})
        print(f"epsilon {math.exp(mid):.5f}  L(k=4) {length:.3f}  agreement {agree:.3f}  per-position {trace[-1]['per_position']}", flush=True)
        if abs(length - a.target_l) < 0.05:
            break
        if length > a.target_l:
            low = mid  # agrees too well: the later layers may say more
        else:
            high = mid
    chosen = trace[-1]
    for model, name in ((target, "ladder-target"), (draft, "ladder-draft")):
        for extra in ("base_o", "base_down"):
            model.__dict__.pop(extra, None)
        path = os.path.join(a.out, name)
        try:
            model.save_pretrained(path, safe_serialization=True, max_shard_size="5GB")
        except TypeError:  # transformers 5 writes safetensors only, and may not take the flag
            model.save_pretrained(path, max_shard_size="5GB")
        tok.save_pretrained(path)
        print(name, path, sum(p.numel() for p in model.parameters()), "parameters", flush=True)
    info = {"target_parameters": sum(p.numel() for p in target.parameters()),
            "draft_parameters": sum(p.numel() for p in draft.parameters()),
            "draft_layers": a.draft_layers, "attn_gain": a.attn_gain, "mlp_gain": a.mlp_gain, "seed": a.seed,
            "target_l_k4": a.target_l, "chosen": chosen, "search": trace, "prompt_tokens_used": width,
            "shape": SHAPE, "vocab_size": len(tok), "seconds": round(time.time() - t0, 1)}
    with open(os.path.join(a.out, "ladder-build.json"), "w") as f:
        json.dump(info, f, indent=1)
    print("built in %.1f s" % (time.time() - t0), flush=True)


if __name__ == "__main__":
    main()
