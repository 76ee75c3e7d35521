"""Fine-tune BERT on MRPC with the Hugging Face Trainer."""

from datasets import load_dataset
from transformers import AutoModelForSequenceClassification, AutoTokenizer, Trainer, TrainingArguments

tokenizer = AutoTokenizer.from_pretrained("bert-base-uncased")
model = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased", num_labels=2)
data = load_dataset("glue", "mrpc").map(
    lambda batch: tokenizer(batch["sentence1"], batch["sentence2"], truncation=True), batched=True
)
args = TrainingArguments(
    output_dir="/scratch/bob/out",
    num_train_epochs=2,
    per_device_train_batch_size=8,
    dataloader_num_workers=16,
    save_steps=500,
)
Trainer(model=model, args=args, train_dataset=data["train"], tokenizer=tokenizer).train()
