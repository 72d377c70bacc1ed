"""Items: metadata rules, filters and addresses."""
