"""The parameters of the train-lora flow (flow signature, CLI options and deployment parameters in one place)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from rpbench.flows.kit.front.settings import InputPaths, MaybeInputPath, OutputFolder, RunSettings, cli
from rpbench.tasks.training.recipe import LoraOptions

_LORA = LoraOptions()


class TrainSettings(RunSettings):
    """A LoRA adapter trained on rpbench's data (RoleBench-layout files, built benchmarks), registered as a
    local model, optionally evaluated beside its base on a benchmark."""

    data: InputPaths = Field(min_length=1, json_schema_extra=cli("--data"),
                            description="Training data: a RoleBench file or folder in its released layout (as "
                                        "`rpbench rolellm eval` reads it; Context-Instruct writes the same), or a "
                                        "benchmark folder from `rpbench furina build` (its accepted test turns; its "
                                        "judged pairs for --objective dpo). Repeat.")
    base: str = Field(default="local/smollm2-135m",
                      description="The base model: a local model (local/<name>; any but the embedded one is "
                                  "registered in the local_models table of a models file).")
    out: OutputFolder = Field(default="runs/train", description="Folder for the adapter, data, losses and report.")
    objective: Literal["sft", "dpo"] = Field(
        default="sft", description="sft: learn the references and accepted replies (RoCIT); dpo: prefer the reply "
                                   "the builder's judge preferred (benchmark folders only).")
    preset: str = Field(default="small", description="Training recipe: small (minutes on a CPU) or rolellama "
                                                     "(RoleLLaMA: AdamW 5e-5, cosine, 4% warm-up, 4x2 batch, 5 "
                                                     "epochs, 512+512 tokens).")
    template: Literal["chat", "alpaca"] = Field(
        default="chat", description="Prompt layout: chat (the base model's chat template) or alpaca (Instruction / "
                                    "Input / Response, Chinese headings for Chinese data). The adapter keeps it, so "
                                    "evaluation prompts it the same way.")
    parts: list[str] = Field(default_factory=lambda: ["train"], json_schema_extra=cli("--part"),
                             description="Which files of a RoleBench folder to read (train, test, ...). Repeat.")
    profiles: InputPaths = Field(default_factory=list, json_schema_extra=cli("--profiles"),
                                description="Role profiles for RoleBench data (the system prompt of its samples). "
                                            "Default: the profiles-*/desc.json beside the data.")
    mix: list[str] = Field(default_factory=list, json_schema_extra=cli("--mix"),
                           description="kind=weight (general, role_specific, dialogue): samples kept in this ratio, "
                                       "the largest set that keeps it. Repeat. Default: everything.")
    heldout: float = Field(default=0.05, ge=0, lt=1, description="Share of samples held out for the held-out loss.")
    max_steps: int | None = Field(default=None, ge=1, description="Stop after this many optimiser steps "
                                                                  "(default: the preset's).")
    lora_rank: int = Field(default=_LORA.rank, ge=1, description="LoRA rank.")
    lora_alpha: int = Field(default=_LORA.alpha, ge=1, description="LoRA alpha.")
    lora_dropout: float = Field(default=_LORA.dropout, ge=0, lt=1, description="LoRA dropout.")
    targets: list[str] = Field(default_factory=lambda: list(_LORA.targets), json_schema_extra=cli("--target"),
                               description="Modules LoRA adapts. Repeat.")
    seed: int = Field(default=0, ge=0, description="Seed for mixing, holding out and training.")
    eval_bench: MaybeInputPath = Field(default=None, description="After training, evaluate the base model and the "
                                                             "adapter on this benchmark folder (into OUT/eval).")


class MergeSettings(BaseModel):
    """A trained adapter merged into its base weights, as a transformers folder any server can load."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    model: str = Field(description="local/<base>+adapter=<folder>, as `rpbench train` prints it.")
    out: OutputFolder = Field(description="Folder for the merged model (safetensors, config, tokenizer).")
    models_file: str | None = Field(default=None,
                                    json_schema_extra=cli("--models-file", deprecated=("--models",)),
                                    description="Models config registering the base (its local_models table).")
