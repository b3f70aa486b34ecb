"""A playbook read statically into plays, roles and the tasks that may start vLLM: nothing is executed.

Files are read with ansible-core's DataLoader, so every value keeps ansible-core 2.19's origin tag (file, line,
column) and its templates stay unrendered until a host's variables render them (render.py). A file that cannot be
read is a PlaybookError naming it; a construct not modelled is left out, never guessed (a task pdlint does not
recognise as a launch says nothing).
"""
from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from typing import Any

from ..finding import Origin
from ..load.tagged import origin_of
from ..paths import display_path
from .role_paths import Roots, find, roots

# The task modules whose content is a launch line, by how it is read (template: a systemd unit rendered per host)
TEMPLATE_MODULES = ("template", "ansible.builtin.template", "ansible.legacy.template")
COPY_MODULES = ("copy", "ansible.builtin.copy", "ansible.legacy.copy")
CONTAINERS = ("community.docker.docker_container", "docker_container", "containers.podman.podman_container",
              "podman_container")
COMMANDS = ("ansible.builtin.command", "ansible.legacy.command", "command", "ansible.builtin.shell",
            "ansible.legacy.shell", "shell")
_ROLE_KEYS = frozenset(("role", "name", "vars", "when", "tags", "become", "become_user", "become_method",
                        "environment", "delegate_to", "ignore_errors", "any_errors_fatal", "collections",
                        "connection", "remote_user", "port", "no_log", "run_once", "check_mode", "diff",
                        "module_defaults", "throttle", "timeout", "debugger", "public", "allow_duplicates"))


class PlaybookError(Exception):
    """A playbook, role or vars file that cannot be read: the message names it and, where known, the line."""

    def __init__(self, origin: Origin, message: str) -> None:
        super().__init__(f"{origin}: {message}")
        self.origin = origin
        self.message = message


@dataclasses.dataclass(frozen=True)
class Launch:
    """A task that writes a launch line: its module, the template file, and where the task is written. A copy task's
    `content:` is its args (source: the tasks file); its `src:` is a file of the role's files/ (source)."""

    module: str
    source: str  # absolute path of the template
    origin: Origin
    dest: Any  # the file it writes (a template over the task's variables): one engine per file
    loop: Any = None  # `loop:` / `with_items:` (a list, or a template that renders to one)
    loop_var: str = "item"
    args: Any = None  # the task's arguments (a container's command:, a command task's line), templates unrendered
    when: Any = None  # the task's `when:`, decided per host (conditions.py)


@dataclasses.dataclass(frozen=True)
class Role:
    name: str
    path: str
    defaults: Mapping[str, Any]  # tagged values, templates unrendered
    vars: Mapping[str, Any]
    params: Mapping[str, Any]  # the entry's own keys (`- {role: x, tp: 6}`): above every other vars
    entry_vars: Mapping[str, Any]  # the entry's `vars:`: after vars/main.yml, in this role's tasks only
    launches: tuple[Launch, ...]
    origin: Origin
    # in `roles:`, an import_role task or a meta dependency of one: its defaults and vars are every task's of the
    # play, as VariableManager reads play.get_roles(); an include_role's are its own tasks' only, or with
    # `public: true` also those of the tasks after it (`after`)
    exported: bool = True
    after: bool = False
    parents: tuple[Role, ...] = ()  # a meta dependency's dependent roles, outermost first (ansible-core's dep chain)
    dependencies: tuple[Role, ...] = ()  # every role its ROLE/meta/main.yml brings in, each after its own
    collection: str = ""  # `ns.coll` of a collection's role
    when: tuple[Any, ...] = ()  # the `when:` of its entry or include task, and of the roles that depend on it
    registered: frozenset[str] = frozenset()  # what its tasks `register:` (known only when the play runs)


@dataclasses.dataclass(frozen=True)
class Play:
    hosts: str  # the pattern, as written
    vars: Mapping[str, Any]
    vars_files: tuple[Mapping[str, Any], ...]
    roles: tuple[Role, ...]
    origin: Origin
    directory: str  # playbook_dir
    registered: frozenset[str] = frozenset()  # what its own tasks `register:`


@dataclasses.dataclass(frozen=True)
class Project:
    playbook: str
    plays: tuple[Play, ...]
    templates: tuple[str, ...]  # every launch template read (absolute): a cached result depends on them


def _loader() -> Any:
    from ansible.parsing.dataloader import DataLoader

    return DataLoader()


def _load(loader: Any, path: str, what: str) -> Any:
    if not os.path.isfile(path):
        raise PlaybookError(Origin(display_path(path)), f"{what} not found")
    try:
        return loader.load_from_file(path, trusted_as_template=True)
    except Exception as exc:  # noqa: BLE001 - ansible-core's parse errors are the user's to fix
        from ..load.reference.errors import error_origin, message_of

        where = error_origin(exc)
        raise PlaybookError(where if where.file else Origin(display_path(path)), f"cannot read {what}: {message_of(exc)}") from None


def _mapping(data: Any, origin: Origin, what: str) -> Mapping[str, Any]:
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise PlaybookError(origin_of(data) or origin, f"{what} must be a mapping")
    return data


def _main_file(folder: str) -> str | None:
    """A role's `defaults/main.yml` (or .yaml, or no extension), as ansible-core finds it."""
    for name in ("main.yml", "main.yaml", "main"):
        path = os.path.join(folder, name)
        if os.path.isfile(path):
            return path
    return None


def _role_vars(loader: Any, folder: str, what: str) -> Mapping[str, Any]:
    """defaults/ or vars/ of a role: main.yml, or a main/ folder whose files merge in name order (as ansible-core's
    Role._load_role_yaml reads a directory)."""
    path = _main_file(folder)
    if path is not None:
        return _mapping(_load(loader, path, what), Origin(display_path(path)), what)
    directory = os.path.join(folder, "main")
    if not os.path.isdir(directory):
        return {}
    merged: dict[str, Any] = {}
    for name in sorted(os.listdir(directory)):
        full = os.path.join(directory, name)
        if os.path.isfile(full) and (name.endswith((".yml", ".yaml", ".json")) or "." not in name):
            merged.update(_mapping(_load(loader, full, what), Origin(display_path(full)), what))
    return merged


def _launches(loader: Any, role_path: str) -> tuple[Launch, ...]:
    tasks_file = _main_file(os.path.join(role_path, "tasks"))
    if tasks_file is None:
        return ()
    tasks = _load(loader, tasks_file, "role tasks")
    found: list[Launch] = []
    for task in tasks if isinstance(tasks, list) else []:
        if not isinstance(task, Mapping):
            continue
        origin = origin_of(task) or Origin(display_path(tasks_file))
        control = task.get("loop_control")
        loop_var = str(control.get("loop_var", "item")) if isinstance(control, Mapping) else "item"
        loop = task.get("loop", task.get("with_items"))
        when = task.get("when")
        for module in TEMPLATE_MODULES:
            args = task.get(module)
            if isinstance(args, Mapping) and isinstance(args.get("src"), str):
                source = os.path.join(role_path, "templates", str(args["src"]))
                found.append(Launch("template", source, origin, args.get("dest"), loop, loop_var, when=when))
        for module in COPY_MODULES:
            args = task.get(module)
            if isinstance(args, Mapping) and isinstance(args.get("content"), str):
                content = args["content"]
                found.append(Launch("copy", tasks_file, origin, args.get("dest"), loop, loop_var, content, when))
            elif isinstance(args, Mapping) and isinstance(args.get("src"), str):
                source = os.path.join(role_path, "files", str(args["src"]))
                found.append(Launch("copy", source, origin, args.get("dest"), loop, loop_var, when=when))
        for module in (*CONTAINERS, *COMMANDS):
            args = task.get(module)
            if args is not None:
                dest = args.get("name") if module in CONTAINERS and isinstance(args, Mapping) else None
                found.append(Launch(module, tasks_file, origin, dest, loop, loop_var, args, when))
    return tuple(found)


def _registered(tasks: Any) -> frozenset[str]:
    """The names a task list's tasks (and their blocks') `register:`."""
    found: set[str] = set()
    for task in tasks if isinstance(tasks, list) else []:
        if isinstance(task, Mapping):
            if isinstance(task.get("register"), str):
                found.add(str(task["register"]))
            for key in ("block", "rescue", "always"):
                found |= _registered(task.get(key))
    return frozenset(found)


def _registered_in(loader: Any, role_path: str) -> frozenset[str]:
    tasks_file = _main_file(os.path.join(role_path, "tasks"))
    return frozenset() if tasks_file is None else _registered(_load(loader, tasks_file, "role tasks"))


def _role(loader: Any, entry: Any, directory: Roots, play_origin: Origin) -> Role:
    origin = origin_of(entry) or play_origin
    if isinstance(entry, str):
        entry = {"role": entry}
    if not isinstance(entry, Mapping) or not isinstance(entry.get("role", entry.get("name")), str):
        raise PlaybookError(origin, "a role entry must name its role (`role: NAME`)")
    name = str(entry.get("role", entry.get("name")))
    found = find(name, directory)
    if isinstance(found, str):
        raise PlaybookError(origin, found)
    path, collection = found
    # a key that is no field of a role definition is a param (RoleDefinition._split_role_params)
    params = {k: v for k, v in entry.items() if k not in _ROLE_KEYS}
    return Role(name, path, _role_vars(loader, os.path.join(path, "defaults"), "role defaults"),
                _role_vars(loader, os.path.join(path, "vars"), "role vars"), params,
                _mapping(entry.get("vars"), origin, "role entry vars"),
                _launches(loader, path), origin, collection=collection,
                when=() if entry.get("when") is None else (entry["when"],), registered=_registered_in(loader, path))


_INCLUDES = ("include_role", "import_role", "ansible.builtin.include_role", "ansible.builtin.import_role",
             "ansible.legacy.include_role", "ansible.legacy.import_role")


def _with_dependencies(loader: Any, role: Role, directory: Roots, chain: tuple[str, ...]) -> list[Role]:
    """role after the roles its ROLE/meta/main.yml `dependencies:` names, each after its own, as Role._load_dependencies
    orders them; a dependency cycle is a PlaybookError."""
    meta_file = _main_file(os.path.join(role.path, "meta"))
    if meta_file is None:
        return [role]
    meta = _mapping(_load(loader, meta_file, "role meta"), Origin(display_path(meta_file)), "role meta")
    dependencies = meta.get("dependencies") or []
    if not isinstance(dependencies, list):
        raise PlaybookError(origin_of(dependencies) or Origin(display_path(meta_file)),
                            "a role's dependencies must be a list")
    out: list[Role] = []
    for entry in dependencies:
        dep = _role(loader, entry, directory.within(role.collection),
                    origin_of(entry) or Origin(display_path(meta_file)))
        if dep.path in chain:
            raise PlaybookError(dep.origin, f"role {dep.name!r} depends on itself")
        dep = dataclasses.replace(dep, exported=role.exported, after=role.after, parents=(*role.parents, role),
                                  when=(*role.when, *dep.when))
        out += _with_dependencies(loader, dep, directory, (*chain, dep.path))
    return [*out, dataclasses.replace(role, dependencies=tuple(out))]


def _static_false(when: Any) -> bool:
    """A `when:` that is false as written (a YAML false, or a list holding one): the task never runs."""
    items = when if isinstance(when, list) else [when]
    return any(item is False or (isinstance(item, str) and item.strip().lower() in ("false", "no")) for item in items)


def _task_roles(loader: Any, tasks: Any, directory: Roots, origin: Origin) -> list[Role]:
    """The roles that a play's task list includes or imports (`include_role: {name: x}` with the task's `vars:`),
    skipping a task whose `when:` is false as written."""
    found: list[Role] = []
    for task in tasks if isinstance(tasks, list) else []:
        if not isinstance(task, Mapping) or _static_false(task.get("when")):
            continue
        for key in _INCLUDES:
            args = task.get(key)
            if args is None:
                continue
            name = args.get("name") if isinstance(args, Mapping) else args
            where = origin_of(task) or origin
            if not isinstance(name, str):
                raise PlaybookError(where, f"{key} must name its role (`name: ROLE`)")
            static = key.endswith("import_role")
            public = isinstance(args, Mapping) and args.get("public") in (True, "true", "yes")
            entry = {"role": name, "vars": task.get("vars"), "when": task.get("when")}
            role = dataclasses.replace(_role(loader, entry, directory, where),
                                       exported=static, after=not static and public)
            found += _with_dependencies(loader, role, directory, (role.path,))
    return found


def _plays(loader: Any, path: str, seen: tuple[str, ...]) -> list[Play]:
    real = os.path.realpath(path)
    if real in seen:
        raise PlaybookError(Origin(display_path(path)), "import_playbook imports itself")
    data = _load(loader, path, "playbook")
    if not isinstance(data, list):
        raise PlaybookError(Origin(display_path(path), 1, 1), "a playbook must be a list of plays")
    directory = os.path.dirname(os.path.abspath(path))
    out: list[Play] = []
    for entry in data:
        origin = origin_of(entry) or Origin(display_path(path))
        if not isinstance(entry, Mapping):
            raise PlaybookError(origin, "a play must be a mapping")
        imported = entry.get("import_playbook", entry.get("ansible.builtin.import_playbook"))
        if isinstance(imported, str):
            out += _plays(loader, os.path.join(directory, imported), (*seen, real))
            continue
        hosts = entry.get("hosts")
        if isinstance(hosts, list):
            hosts = ",".join(str(h) for h in hosts)
        if not isinstance(hosts, str):
            raise PlaybookError(origin, "a play must name its hosts (`hosts: PATTERN`)")
        files = entry.get("vars_files") or []
        vars_files = tuple(_mapping(_load(loader, os.path.join(directory, str(f)), "vars file"), origin, "vars file")
                           for f in (files if isinstance(files, list) else [files]))
        roles: list[Role] = []
        search = roots(directory, entry.get("collections"))
        for section in ("pre_tasks", "roles", "tasks", "post_tasks"):  # the order a play runs them
            if section == "roles":
                for written in entry.get("roles") or []:
                    role = _role(loader, written, search, origin)
                    roles += _with_dependencies(loader, role, search, (role.path,))
            else:
                roles += _task_roles(loader, entry.get(section), search, origin)
        registered = frozenset(_registered(entry.get(s)) for s in ("pre_tasks", "tasks", "post_tasks"))
        out.append(Play(str(hosts), _mapping(entry.get("vars"), origin, "play vars"), vars_files,
                        tuple(roles), origin, directory, frozenset().union(*registered)))
    return out


def read(playbook: str) -> Project:
    """The plays of playbook (import_playbook followed). Raises PlaybookError."""
    loader = _loader()
    plays = tuple(_plays(loader, playbook, ()))
    templates = tuple(sorted({launch.source for play in plays for role in play.roles for launch in role.launches}))
    # the files read for launch lines: templates, and the tasks files of container and command tasks
    return Project(playbook, plays, templates)
