# The work is done by the action plugin (plugins/action/check.py) on the controller.
from __future__ import annotations

DOCUMENTATION = r"""
module: check
short_description: Fail the play when the inventory's vLLM P/D topology is invalid
version_added: "0.1.0"
description:
  - Runs every pdlint rule on the play's hostvars (already templated by Ansible) and fails listing every
    finding in the pdlint CLI's text format. Runs on the controller and never changes a host.
requirements:
  - jsonschema >= 4.18 on the controller (listed in the collection's requirements.txt)
options:
  hosts:
    description: Inventory hosts to check together; default every host in the inventory.
    type: list
    elements: str
  fail_on:
    description: Lowest severity that fails the task.
    type: str
    choices: [error, warning]
    default: error
  skip:
    description:
      - Rule ids (or families such as C(gpu)) not to report; added to the I(config) file's C(ignore).
      - To suppress a rule for some hosts only, set C(pdlint_skip) in their inventory variables instead.
    type: list
    elements: str
    default: []
  select:
    description: Rule ids or families to report, all others are not; replaces the I(config) file's C(select).
    type: list
    elements: str
  config:
    description:
      - A pdlint configuration file (C(.pdlint.yaml), or a C(pyproject.toml) with a C([tool.pdlint]) table), read
        on the controller as the CLI reads it; its C(select), C(ignore), C(severity) and C(vllm_version) apply.
      - Its C(strict) does not; use I(fail_on). Without this option no configuration file is read.
    type: path
  vllm_version:
    description:
      - The vLLM release whose rules apply to hosts whose inventory variables and I(config) file set no
        C(vllm_version) (as the CLI's C(--vllm-version)); default the newest release pdlint knows.
      - Accepts C(0.32.0), C(v0.32.0), C(0.32), C(0.32.0.post1), C(0.32.0+cpu); C(pdlint versions) lists the releases.
    type: str
  playbook:
    description:
      - A playbook (C(site.yml)) whose plays and roles say what each host runs, read statically on the controller
        as the CLI's C(--playbook) reads it (nothing runs); each launch line is rendered per host and linted as
        the command line. Default the I(config) file's C(playbook), else none.
    type: path
  allow_lookups:
    description:
      - Render the lookups in the I(playbook)'s plays and launch templates (as the CLI's C(--allow-lookups));
        without it they are C(unresolved). The play's own host variables are Ansible's, already rendered.
    type: bool
    default: false
  explain_html:
    description:
      - Also write C(pdlint explain)'s HTML report of the checked hosts (engines, GPUs, rank maps, ports, the
        findings) to this path on the controller, before the task fails on findings.
    type: path
attributes:
  check_mode:
    description: Can run in check_mode and return the same findings; it only reads the play's variables.
    support: full
  diff_mode:
    description: Has no diff; it changes nothing.
    support: none
  platform:
    description: Runs on the controller (an action plugin); the inventory hosts are never contacted.
    platforms: all
    support: full
author: pdlint developers (@pdlint)
"""

EXAMPLES = r"""
- name: Validate the P/D topology before bring-up
  pdlint.topology.check:
    fail_on: error
  run_once: true
"""

RETURN = r"""
findings:
  description: Every finding, with the keys of pdlint's JSON output.
  returned: always
  type: list
  elements: dict
suppressed:
  description: The findings C(pdlint_skip) suppressed, with the same keys; they never fail the task.
  returned: always
  type: list
  elements: dict
"""
