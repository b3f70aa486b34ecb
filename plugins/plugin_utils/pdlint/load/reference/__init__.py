"""The reference loader: ansible-core's InventoryManager + VariableManager."""
