"""The files of a Hugging Face checkpoint folder that make its tokenizer (read by
``hf_checkpoint``, copied beside an exported adapter by ``lora``)."""

TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model", "tokenizer_config.json",
                   "special_tokens_map.json", "added_tokens.json", "chat_template.jinja")
