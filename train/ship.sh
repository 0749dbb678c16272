#!/bin/sh
# Rebuild the shipped tool-retrieval model: packages/fastmcp-filtering-model/.../model.onnx.
# Usage: train/ship.sh DIR (DIR: where train/build_data.sh keeps the sources' clones).
# Needs the project's .venv and .venv-train (torch, sentence-transformers, onnx, onnxruntime;
# see train/README.md "Fine-tuning"), and the base weights unzipped to train/.cache/minilm-st.
# About 20 minutes on 2 cores. CI never runs it.
set -eu
dir=${1:?usage: train/ship.sh DIR}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
[ -f train/data/sealtools/tools.jsonl ] || PYTHON=.venv/bin/python train/build_data.sh "$dir"
# No fold ever trains on arcade (its requests are the toolkits' own evals), so the fold that
# holds arcade out trains on everything trainable: its model is the one shipped, and arcade
# is that very model's held-out score (train/results/finetuned-arcade.json, same sha256).
.venv/bin/python train/finetune.py pairs --fold arcade
.venv-train/bin/python train/finetune.py train --fold arcade
.venv-train/bin/python train/export.py --fold arcade
.venv/bin/python train/ship.py
