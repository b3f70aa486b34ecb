"""The playbook level: plays, roles and launch templates read statically into what each host will run."""
