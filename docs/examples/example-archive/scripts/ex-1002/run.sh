#!/bin/bash
#SBATCH --gres=gpu:1 --cpus-per-task=4 --time=01:00:00
# Installs its dependencies on the GPU node, inside the allocation.
pip install -r requirements.txt
python train.py --output_dir /scratch/bob/out
aws s3 cp --recursive /scratch/bob/out s3://nlp-models/bert-finetune/
