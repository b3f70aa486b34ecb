"""How each release parses a `vllm serve` line: arguments, types, config files, Dynamo."""
