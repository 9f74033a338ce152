"""The toy language: the toy tokenizer and the synthetic bilingual language the toy is trained on."""
