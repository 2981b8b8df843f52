"""Local models in a transformers folder, or with a LoRA adapter on top, run with transformers.

GGUF files run on llama.cpp (``llamacpp``), which is several times
faster on a CPU; this engine serves what llama.cpp cannot load: a transformers
checkpoint such as a fine-tuned model. It loads its weights lazily, once per
process, on CUDA when present. Requests from any thread or event loop are
queued; one worker thread per model drains its queue into shared, left-padded
``generate`` calls (static batches), so concurrent callers share forward
passes. Each row is sampled with its own temperature and its own seeded
generator (``_PerRowSampler``), so its reply does not depend on its batch
neighbours' draws. A request may carry a JSON schema; its row is then
constrained with xgrammar so the reply is valid JSON of that schema.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from rpbench.tasks.llm.local.generation import EngineMeter, GenRequest, GenResult

log = logging.getLogger("rpbench.local_model")
MAX_BATCH = 8
GATHER_WINDOW_S = 0.02


def _batch_key(request: GenRequest) -> float:
    # Temperature, top-p and seed are applied per row (_PerRowSampler); the repetition penalty is per call.
    return request.repetition_penalty


class TransformersEngine:
    """A transformers model behind a batcher. Use ``Engines.for_model(name)`` (``engines``)."""

    def __init__(self, name: str, weights: Path, max_batch: int = MAX_BATCH, adapter: Path | None = None) -> None:
        self.name = name
        self.meter = EngineMeter()
        self.weights = weights
        self.adapter = adapter
        self.max_batch = max_batch
        self._queue: queue.Queue[GenRequest] = queue.Queue()
        self._loaded = threading.Event()
        self._load_error: BaseException | None = None
        self._grammars: dict[str, Any] = {}
        self.batches_run = 0
        self.rows_run = 0
        self._worker = threading.Thread(target=self._run, name=f"rpbench-local-{name}", daemon=True)
        self._worker.start()

    # -- public API ---------------------------------------------------------------------------
    def submit(self, request: GenRequest) -> Future:
        self.meter.track(request.future)
        self._queue.put(request)
        return request.future

    def generate(self, messages: list[dict[str, Any]], **kwargs: Any) -> GenResult:
        return self.submit(GenRequest(messages=messages, **kwargs)).result()

    # -- worker ---------------------------------------------------------------------------------
    def _load(self) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
        started = time.monotonic()
        self.device = "cuda" if torch.cuda.is_available() else "cpu"
        log.info("loading local model %s from %s (%s) ...", self.name, self.weights.name, self.device)
        if self.weights.is_file():  # a GGUF file: transformers de-quantizes it
            where, extra = str(self.weights.parent), {"gguf_file": self.weights.name}
        else:  # a transformers model folder
            where, extra = str(self.weights), {}
        # An adapter folder keeps the tokenizer it was trained with (and so its chat template: the prompt
        # layout it learned); the base model's otherwise.
        if self.adapter is not None and (self.adapter / "tokenizer_config.json").is_file():
            self.tokenizer: Any = AutoTokenizer.from_pretrained(str(self.adapter))
        else:
            self.tokenizer = AutoTokenizer.from_pretrained(where, **extra)
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        dtype = torch.float16 if self.device == "cuda" else torch.float32
        model: Any = AutoModelForCausalLM.from_pretrained(where, dtype=dtype, **extra)
        if self.adapter is not None:  # a LoRA adapter (rpbench train): peft applies it on the base weights
            from peft import PeftModel

            model = PeftModel.from_pretrained(model, str(self.adapter))
        self.model: Any = model.to(self.device)
        self.model.eval()
        log.info("local model %s ready in %.1f s", self.name, time.monotonic() - started)

    def _grammar(self, schema: dict[str, Any]) -> Any:
        import json

        import xgrammar as xgr

        key = json.dumps(schema, sort_keys=True)
        if key not in self._grammars:
            if not hasattr(self, "_compiler"):
                info = xgr.TokenizerInfo.from_huggingface(self.tokenizer, vocab_size=self.model.config.vocab_size)
                self._compiler = xgr.GrammarCompiler(info)
            self._grammars[key] = self._compiler.compile_json_schema(key, any_whitespace=False)
        return self._grammars[key]

    def _run(self) -> None:
        pending: list[GenRequest] = []
        while True:
            if not pending:
                pending.append(self._queue.get())
            # Gather whatever else arrives within a short window, so concurrent callers share a batch.
            deadline = time.monotonic() + GATHER_WINDOW_S
            while len(pending) < self.max_batch * 4:
                timeout = deadline - time.monotonic()
                if timeout <= 0:
                    break
                try:
                    pending.append(self._queue.get(timeout=timeout))
                except queue.Empty:
                    break
            if not self._loaded.is_set():
                try:
                    self._load()
                except BaseException as exc:  # report the load failure to every caller, keep serving errors
                    self._load_error = exc
                self._loaded.set()
            if self._load_error is not None:
                for req in pending:
                    error = RuntimeError(f"local model {self.name} failed to load: {self._load_error}")
                    req.future.set_exception(error)
                pending = []
                continue
            key = _batch_key(pending[0])
            batch = [r for r in pending if _batch_key(r) == key][: self.max_batch]
            pending = [r for r in pending if r not in batch]
            try:
                results = self._generate_batch(batch)
            except BaseException as exc:
                for req in batch:
                    req.future.set_exception(exc)
                continue
            for req, res in zip(batch, results, strict=True):
                req.future.set_result(res)

    def _generate_batch(self, batch: list[GenRequest]) -> list[GenResult]:
        import torch
        from transformers import LogitsProcessorList

        prompts = [
            self.tokenizer.apply_chat_template(r.messages, tokenize=False, add_generation_prompt=True) for r in batch
        ]
        enc = self.tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False).to(self.device)
        kwargs: dict[str, Any] = {
            "max_new_tokens": max(r.max_tokens for r in batch),
            # Greedy over logits the row sampler has already reduced to its chosen token.
            "do_sample": False,
            "pad_token_id": self.tokenizer.pad_token_id,
            "repetition_penalty": batch[0].repetition_penalty,
        }
        processors: list[Any] = []
        if any(r.schema for r in batch):
            grammars = [self._grammar(r.schema) if r.schema else None for r in batch]
            processors.append(_MixedGrammarProcessor(grammars))
        if any(r.temperature > 0 for r in batch):
            processors.append(_PerRowSampler(batch, self.device))
        if processors:
            kwargs["logits_processor"] = LogitsProcessorList(processors)
        with torch.inference_mode():
            out = self.model.generate(**enc, **kwargs)
        self.batches_run += 1
        self.rows_run += len(batch)
        prompt_len = enc["input_ids"].shape[1]
        results = []
        eos = self.tokenizer.eos_token_id
        for i, req in enumerate(batch):
            new = out[i, prompt_len:].tolist()
            new = [t for t in new if t != self.tokenizer.pad_token_id or t == eos]
            finish = "stop"
            if eos in new:
                new = new[: new.index(eos)]
            elif len(new) >= req.max_tokens:
                finish = "length"
            new = new[: req.max_tokens]
            text = str(self.tokenizer.decode(new, skip_special_tokens=True)).strip()
            n_prompt = int(enc["attention_mask"][i].sum())
            results.append(GenResult(text, n_prompt, len(new), finish))
        return results


class _MixedGrammarProcessor:
    """xgrammar's HF processor, but rows without a schema are left unconstrained."""

    def __init__(self, grammars: list[Any]) -> None:
        import xgrammar as xgr

        self.xgr = xgr
        self.grammars = grammars
        self.matchers = [xgr.GrammarMatcher(g) if g is not None else None for g in grammars]
        vocab = next(g for g in grammars if g is not None).tokenizer_info.vocab_size
        self.bitmask = xgr.allocate_token_bitmask(len(grammars), vocab)
        self.started = False

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import torch

        rows = [(i, m) for i, m in enumerate(self.matchers) if m is not None]
        if self.started:
            for i, matcher in rows:
                if not matcher.is_terminated():
                    matcher.accept_token(int(input_ids[i, -1]))
        self.started = True
        for i, matcher in rows:
            if not matcher.is_terminated():
                matcher.fill_next_token_bitmask(self.bitmask, i)
        constrained = torch.tensor([i for i, _ in rows], dtype=torch.int32)
        mask = self.bitmask.to(scores.device)
        self.xgr.apply_token_bitmask_inplace(scores, mask, indices=constrained.tolist())
        return scores


class _PerRowSampler:
    """Draw each row's next token with the row's own temperature, top-p and seeded generator.

    The drawn token becomes the only one left (every other logit -inf), so generate() runs greedy
    over it; a row at temperature 0 keeps its argmax. A row's draws come from a generator seeded
    with its own seed, so they do not depend on how many rows share the batch.
    """

    def __init__(self, batch: list[GenRequest], device: str) -> None:
        import torch

        self.rows = [(r.temperature, r.top_p) for r in batch]
        self.generators = []
        for r in batch:
            gen = torch.Generator(device=device)
            gen.manual_seed(r.seed if r.seed is not None else 0)
            self.generators.append(gen)

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import torch

        for i, (temperature, top_p) in enumerate(self.rows):
            if temperature > 0:
                probs = torch.softmax(scores[i].float() / temperature, dim=-1)
                if top_p is not None and top_p < 1.0:
                    ordered, order = torch.sort(probs, descending=True)
                    outside = torch.cumsum(ordered, dim=-1) - ordered > top_p
                    probs = probs.scatter(0, order, ordered.masked_fill(outside, 0.0))
                token = int(torch.multinomial(probs, 1, generator=self.generators[i]))
            else:
                token = int(torch.argmax(scores[i]))
            row = torch.full_like(scores[i], float("-inf"))
            row[token] = 0.0
            scores[i] = row
        return scores
