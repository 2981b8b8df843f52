"""Fine-tuning from rpbench's own data: role-conditioned LoRA (RoleLLM's RoCIT) and preference tuning (DPO)
from the builder's judgments. Training runs on peft and trl; nothing here depends on Prefect."""
