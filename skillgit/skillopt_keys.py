"""Microsoft SkillOpt's config vocabulary, as skillgit/skillopt_import.py maps it: SkillOpt's sections, aliases
and backend names (from its skillopt/config.py and skillopt/model/common.py), the skillgit backend each role backend
becomes, and per key: the same setting in skillgit (`SIMPLE`), why there is none (`REFUSED`), SkillOpt's defaults
that need nothing carried (`SKILLOPT_DEFAULTS`) and keys that only matter when a switch is on (`DEPENDS`)."""

from __future__ import annotations

from typing import Any

STATUSES = ("mapped", "approximated", "blank", "default", "unused", "refused")
SECTIONS = ("model", "train", "gradient", "optimizer", "evaluation", "env")
ROLES = {"optimizer": "teacher", "target": "student"}
# SkillOpt's flat names that are not simply the structured key's last part (skillopt/config.py `_FLATTEN_MAP`)
FLAT_NAMES = {"model_backend": "model.backend", "optimizer_model": "model.optimizer", "target_model": "model.target",
              "edit_budget": "optimizer.learning_rate", "min_edit_budget": "optimizer.min_learning_rate",
              "meta_edit_budget": "optimizer.meta_learning_rate", "env": "env.name"}
CODEX_ALIASES = {"codex_path": "codex_exec_path", "codex_cli_bin": "codex_exec_path", "codex_bin": "codex_exec_path",
                 "sandbox": "codex_exec_sandbox", "codex_sandbox": "codex_exec_sandbox"}
# SkillOpt backend names (skillopt/model/common.py `_BACKEND_ALIASES`) → the canonical one
BACKEND_ALIASES = {"azure": "openai_chat", "azure_openai": "openai_chat", "azure-openai": "openai_chat",
                   "openai_chat": "openai_chat", "openai": "codex_exec", "codex": "codex_exec",
                   "claude": "claude_chat", "anthropic": "claude_chat", "cursor": "cursor_exec",
                   "cursor_agent": "cursor_exec", "copilot": "copilot_chat", "copilot_cli": "copilot_chat",
                   "github_copilot": "copilot_chat", "qwen": "qwen_chat", "minimax": "minimax_chat",
                   "openai_compatible_chat": "openai_compatible", "openai-compatible": "openai_compatible",
                   "compat": "openai_compatible"}
# skillgit backend for each SkillOpt role backend; None: no equivalent for that role
TEACHER_BACKENDS = {"openai_chat": "azure", "claude_chat": "anthropic", "qwen_chat": "openai",
                    "openai_compatible": "openai", "minimax_chat": "openai"}
STUDENT_BACKENDS = {**TEACHER_BACKENDS, "codex_exec": "command", "claude_code_exec": "command",
                    "copilot_exec": "agent"}
DEFAULT_MODELS = {"claude_chat": "claude-sonnet-4-6", "claude_code_exec": "claude-sonnet-4-6",
                  "qwen_chat": "Qwen/Qwen3.5-4B", "minimax_chat": "MiniMax-M3", "openai_compatible": "gpt-4o-mini"}
ROLE_DEFAULTS = (None, "", "openai_chat")  # role backends SkillOpt's --backend may fill (its trainer's rule)
AUTH_MODES = {"api_key": "api_key", "key": "api_key", "managed_identity": "managed_identity",
              "aad": "managed_identity", "azure_ad": "managed_identity", "azure_cli": "azure_cli"}
COMPAT_AUTH = ("openai_compatible", "compat", "openai")
DEFAULT_SCOPE = "https://cognitiveservices.azure.com/.default"
# keys whose value is SkillOpt's default and means nothing to carry (skillgit behaves so, or has no switch)
SKILLOPT_DEFAULTS: dict[str, Any] = {
    "train.train_size": 0, "train.accumulation": 1, "gradient.failure_only": False,
    "optimizer.longitudinal_pair_policy": "mixed", "optimizer.use_skill_aware_reflection": False,
    "evaluation.sel_env_num": 0, "evaluation.test_env_num": 0, "evaluation.use_semantic_density": False,
    "env.split_mode": "ratio", "env.limit": 0, "model.codex_trace_to_optimizer": True,
    "model.rewrite_max_completion_tokens": 64000, "model.claude_code_exec_path": "claude",
    "model.claude_code_exec_use_sdk": "auto", "model.claude_code_exec_effort": "medium",
    "model.claude_code_exec_max_thinking_tokens": 16384,
}
SIMPLE = {  # SkillOpt key → the same setting in skillgit
    "train.num_epochs": "train.num_epochs", "train.batch_size": "train.batch_size", "train.seed": "train.seed",
    "gradient.minibatch_size": "gradient.minibatch_size", "gradient.merge_batch_size": "gradient.merge_batch_size",
    "gradient.analyst_workers": "gradient.analyst_workers",
    "optimizer.learning_rate": "optimizer.learning_rate", "optimizer.min_learning_rate": "optimizer.min_learning_rate",
    "optimizer.lr_scheduler": "optimizer.lr_scheduler", "optimizer.skill_update_mode": "optimizer.skill_update_mode",
    "optimizer.use_slow_update": "optimizer.use_slow_update",
    "optimizer.slow_update_samples": "optimizer.slow_update_samples",
    "optimizer.slow_update_gate_with_selection": "optimizer.slow_update_gate_with_selection",
    "optimizer.use_meta_skill": "optimizer.use_meta_skill", "evaluation.use_gate": "evaluation.use_gate",
    "evaluation.gate_metric": "evaluation.gate_metric", "evaluation.eval_test": "evaluation.eval_test",
    "env.split_seed": "env.split_seed", "env.workers": "env.workers",
    "optimizer.recall_k": "optimizer.recall_k",  # SkillOpt-Sleep's recall of similar past tasks (loop/recall.py)
    # deep reflect (skillgit/loop/deep_reflect.py)
    "gradient.use_deep_reflect": "optimizer.deep_reflect.enabled",
    "gradient.deep_reflect_failures": "optimizer.deep_reflect.failures",
    "gradient.deep_reflect_successes": "optimizer.deep_reflect.successes",
}
REFUSED = {  # SkillOpt key → why skillgit has no equivalent (when the value is not blank or SkillOpt's default)
    "train.train_size": "skillgit trains on the whole train split; size the splits with env.split_ratio",
    "train.accumulation": "skillgit has no gradient accumulation; raise train.batch_size instead",
    "train.steps_per_epoch": "skillgit's steps per epoch follow from the train split and train.batch_size "
                             "(train.max_steps caps a run)",
    "gradient.failure_only": "skillgit's teacher always reflects on failures and successes",
    "optimizer.meta_learning_rate": "skillgit's meta skill update has no separate edit budget",
    "optimizer.longitudinal_pair_policy": "skillgit's slow update has no pair policy",
    "optimizer.use_skill_aware_reflection": "skillgit has no skill-aware (EmbodiSkill) reflection",
    "evaluation.sel_env_num": "skillgit gates on the whole val split; size it with env.split_ratio",
    "evaluation.test_env_num": "skillgit scores the whole test split; size it with env.split_ratio",
    "evaluation.use_semantic_density": "skillgit has no semantic-density gate term",
    "env.name": "SkillOpt's environment packages are not carried over: skillgit's own adapters (`skillgit env "
                "list`: searchqa, math, textgame, docvqa) read the benchmark's published files — set env.name and "
                "env.tasks yourself, or point env.tasks at JSONL tasks (id, input, expected) scored by env.scorer",
    "env.split_output_dir": "skillgit records each run's split in git; there is no split output folder",
    "env.out_root": "skillgit keeps runs in the repository (commits, notes, .skillgit/); no output root",
    "env.limit": "skillgit uses every task of the split; trim the task file instead",
    "env.max_turns": "SkillOpt environments' turn limit; skillgit answer tasks take one turn (an agent student's "
                     "turns are model.student.command.max_turns)",
    "model.rewrite_reasoning_effort": "skillgit has no per-stage reasoning effort (model.teacher.reasoning_effort "
                                      "applies to every teacher call)",
    "model.rewrite_max_completion_tokens": "skillgit has no per-stage token limit (model.teacher.max_tokens)",
    "model.codex_exec_path": "skillgit runs the `codex` found on PATH: put its folder on PATH, or use "
                             "model.student.command.preset: generic with argv",
    "model.claude_code_exec_path": "skillgit runs the `claude` found on PATH: put its folder on PATH",
    "model.codex_trace_to_optimizer": "skillgit always gives the teacher what the agent's trace reader extracts",
}
DEPENDS = {  # keys that only matter when another key is on
    "optimizer.skill_aware_appendix_source": ("optimizer.use_skill_aware_reflection", "skill-aware reflection"),
    "optimizer.skill_aware_consolidate_threshold": ("optimizer.use_skill_aware_reflection", "skill-aware reflection"),
    "evaluation.semantic_density_weight": ("evaluation.use_semantic_density", "semantic density"),
    "evaluation.leading_words": ("evaluation.use_semantic_density", "semantic density"),
}
