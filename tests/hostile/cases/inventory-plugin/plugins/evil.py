"""An inventory plugin whose import leaves the canary: it must never be loaded by default."""
import os

from ansible.plugins.inventory import BaseInventoryPlugin

open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "CANARY"), "w").close()


class InventoryModule(BaseInventoryPlugin):
    NAME = "evil"

    def verify_file(self, path):
        return True

    def parse(self, inventory, loader, path, cache=True):
        super().parse(inventory, loader, path)
        inventory.add_host("p1")
