"""What every web request passes through, whichever page or API it is for: the input guard,
the store's rule for text and data, YAML documents, security settings, metrics access."""
