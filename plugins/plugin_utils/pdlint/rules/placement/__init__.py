"""Rules on where engines run: ports and ids on the network, GPUs, multi-node engines."""
