"""A filter plugin an untrusted ansible.cfg adds: importing it leaves the canary."""
import os

open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "CANARY"), "w").close()


class FilterModule:
    def filters(self):
        return {"evil": lambda value: value}
