"""The stale drafter config.json of the seed-incident run, and a CPU check that it collapses acceptance.

A stale config.json is the drafter's own config with values copied from another model of its family
(the seed case: a config that loaded without a word and accepted almost nothing). Candidates, most
plausible first, each loading in vLLM without an error:
  tied      "tie_word_embeddings": true — copied from a small sibling that ties its output head to
            the embedding (Llama-3.2-1B/3B, Qwen2.5-0.5B do; the larger ones do not). vLLM then skips
            the checkpoint's trained lm_head.weight (skip_prefixes, vllm/model_executor/models/llama.py)
            and scores tokens with the embedding matrix instead.
  rope      rope_theta 500000 (Llama 3's) instead of the drafter's 10000.
  sibling   both, as a whole sibling config.json would carry them.

  python3 stale.py check --models /tmp/models --out choice.json   # greedy position-0 agreement, CPU
  python3 stale.py write --fixed CONFIG --choice choice.json --out STALE_CONFIG
`check` measures, on the load generator's prompts, how often each candidate drafter's greedy next
token equals the target's along the target's own greedy continuation (what vLLM's position-0
acceptance is under greedy sampling), and picks the first candidate at or under 0.2."""
import argparse
import copy
import json
import os
import sys

CANDIDATES = ("tied", "sibling", "rope")


def read_json(path):
    with open(path) as handle:
        return json.load(handle)


def edited(config, name):
    cfg = copy.deepcopy(config)
    if name in ("tied", "sibling"):
        cfg["tie_word_embeddings"] = True
    if name in ("rope", "sibling"):
        if isinstance(cfg.get("rope_parameters"), dict):
            cfg["rope_parameters"]["rope_theta"] = 500000.0
        else:
            cfg["rope_theta"] = 500000.0
    return cfg


def check(models, out):
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    sys.path.insert(0, os.environ.get("KIT", "/tmp/stage/kit"))
    from loadgen import prompts

    torch.set_grad_enabled(False)
    tok = AutoTokenizer.from_pretrained(os.path.join(models, "target"))
    target = LlamaForCausalLM.from_pretrained(os.path.join(models, "target"), dtype=torch.float32).eval()
    fixed_dir = os.path.join(models, "draft_noisy")
    fixed_config = read_json(os.path.join(fixed_dir, "config.json"))
    seqs = []
    for _, prompt in prompts():
        ids = tok(prompt, return_tensors="pt").input_ids[:, :200]
        gen = target.generate(ids, max_new_tokens=48, do_sample=False, min_new_tokens=48)
        seqs.append((ids.shape[1], gen))

    def agreement(model):
        hits = total = 0
        for n_prompt, gen in seqs:
            want = target(gen).logits[0, n_prompt - 1:-1].argmax(-1)
            got = model(gen).logits[0, n_prompt - 1:-1].argmax(-1)
            hits += int((want == got).sum())
            total += want.numel()
        return hits / total

    result = {"fixed": agreement(LlamaForCausalLM.from_pretrained(fixed_dir, dtype=torch.float32).eval())}
    for name in CANDIDATES:
        cfg = edited(fixed_config, name)
        model = LlamaForCausalLM.from_pretrained(fixed_dir, config=LlamaConfig.from_dict(cfg), dtype=torch.float32).eval()
        if cfg.get("tie_word_embeddings"):
            model.lm_head.weight = model.model.embed_tokens.weight  # as vLLM: the trained head is skipped
        result[name] = agreement(model)
    chosen = next((n for n in CANDIDATES if result[n] <= 0.2), min(CANDIDATES, key=result.get))
    doc = {"position0_agreement": result, "chosen": chosen}
    with open(out, "w") as handle:
        json.dump(doc, handle, indent=1)
    print(json.dumps(doc))


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("check")
    c.add_argument("--models", default="/tmp/models")
    c.add_argument("--out", required=True)
    w = sub.add_parser("write")
    for flag in ("--fixed", "--choice", "--out"):
        w.add_argument(flag, required=True)
    a = ap.parse_args()
    if a.cmd == "check":
        check(a.models, a.out)
    else:
        name = read_json(a.choice)["chosen"]
        cfg = edited(read_json(a.fixed), name)
        with open(a.out, "w") as out:
            json.dump(cfg, out, indent=2, sort_keys=True)
            out.write("\n")
        print("stale config:", name)


if __name__ == "__main__":
    main()
