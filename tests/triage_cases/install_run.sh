#!/bin/bash
#SBATCH --gres=gpu:1
# pip install is mentioned in this comment only
pip install --no-cache-dir -r requirements.txt && \
    python -m pip install flash-attn --no-build-isolation
python pageable_train.py
