"""Training the toy and scoring it: `python -m compute.training.train`, its recipes, checks and scores."""
