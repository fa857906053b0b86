#!/usr/bin/env python3
"""Checks compose.yaml for what real use needs (issue 11), on the configuration Compose itself
resolved: anchors merged, ${VARIABLES} interpolated.

  docker-compose -f compose.yaml config | python3 .ci/check-compose.py

Reads that YAML on standard input (or from the file named as the only argument) and prints one line
per problem; exits 1 if there is any. Needs PyYAML (Debian's python3-yaml, which docker-compose
brings).
"""
import re
import sys

import yaml

RESTART = "unless-stopped"
# Services that keep state, and where it must live: a named volume mounted at that path.
STATE = {
    "postgres": "/var/lib/postgresql/data",
    "artemis": "/var/lib/artemis-instance",
    "minio": "/data",
    "prometheus": "/prometheus",
    "grafana": "/var/lib/grafana",
}
# What Prometheus and Grafana must be provisioned with (issue 13): mounted from config/.
PROVISIONED = {
    "prometheus": {"/etc/prometheus": "config/prometheus"},
    "grafana": {"/etc/grafana/provisioning": "config/grafana/provisioning",
                "/etc/grafana/dashboards/jobgate.json": "config/grafana/jobgate.json"},
}
GATEWAY, WORKER = "jobgate", "worker"
# The Hawtio console (issue 13): the jar's hawtio command, on the gateway's Jolokia, this host only.
HAWTIO, HAWTIO_PORT = "hawtio", 8081
# jobgate.roles per service (docs/settings.md: roles and several instances).
EXPECTED_ROLES = {
    GATEWAY: {"JOBGATE_ROLES": "api,relay,sweeper,reconciler"},
    WORKER: {"JOBGATE_ROLES": "worker"},
}
JMS_PORT = 61616
# SHA-256 of the shipped demo secrets (io.jobgate.tenant.DemoCredentials): never in compose's real use.
DEMO_DIGESTS = {
    "df76ff796f70d2c9cb055ea6280553caa27eda26b70e01082c160de75a05a4a9",  # dev-admin-key
    "62c2fc277ab4261d4243be7b5cf49bdab2c39fed01ae2d4ce1cf9a38ec4e793c",  # dev-acme-key
    "4763e480ccf7dc583baddba37894eb1dc1fabf79bfc9d82a4a8b00710e18f124",  # dev-globex-key
}


def image_problem(image):
    """None when the image names a fixed tag (or digest); else what is wrong."""
    if not isinstance(image, str) or not image.strip():
        return "has no image"
    if "@sha256:" in image:
        return None
    last = image.rsplit("/", 1)[-1]
    if ":" not in last:
        return f"image {image} has no tag (means latest)"
    tag = last.split(":", 1)[1]
    if tag == "latest" or tag.startswith("latest-") or tag.endswith("-latest"):
        return f"image {image} is not pinned (tag {tag})"
    if not re.search(r"\d", tag):
        return f"image {image} has a moving tag {tag} (no version in it)"
    return None


def environment(service):
    env = service.get("environment") or {}
    if isinstance(env, list):  # ["KEY=value", ...]
        env = dict(item.split("=", 1) if "=" in item else (item, None) for item in env)
    return {k: ("" if v is None else str(v)) for k, v in env.items()}


def published_ports(service):
    """The container ports published on the host: {target: published} (published may be None)."""
    found = {}
    for port in service.get("ports") or []:
        if isinstance(port, dict):
            if port.get("published") not in (None, ""):
                found[int(port["target"])] = str(port["published"])
            continue
        text = str(port).split("/", 1)[0]  # [ip:][host:]container[/proto]
        parts = text.rsplit(":", 2)
        target = parts[-1]
        published = parts[-2] if len(parts) >= 2 else None
        found[int(target)] = published
    return found


def named_volume_targets(service, declared):
    """Targets of the service's mounts that come from a declared named volume."""
    targets = {}
    for volume in service.get("volumes") or []:
        if isinstance(volume, dict):
            kind, source, target = volume.get("type", "volume"), volume.get("source"), volume.get("target")
        else:
            bits = str(volume).split(":")
            source, target = (bits[0], bits[1]) if len(bits) >= 2 else (None, bits[0])
            kind = "volume" if source and not source.startswith(("/", ".", "~", "$")) else "bind"
        if kind == "volume" and source in declared:
            targets[target] = source
    return targets


def command_words(service):
    command = service.get("command") or []
    return command.split() if isinstance(command, str) else [str(c) for c in command]


def runs_hawtio(service):
    words = command_words(service)
    return any(w.endswith("jobgate.jar") for w in words) and HAWTIO in words


def hawtio_problems(service):
    """The console: the jar's hawtio command on the jobgate service, with the admin key, on loopback."""
    where = f"service {HAWTIO}:"
    problems = []
    words = command_words(service)
    if not runs_hawtio(service):
        problems.append(f"{where} does not run 'java -jar jobgate.jar hawtio'")
    gateway = words[words.index("--gateway") + 1] if "--gateway" in words[:-1] else ""
    if not re.fullmatch(rf"http://{GATEWAY}:8080/?", gateway):
        problems.append(f"{where} --gateway is {gateway!r}, not the {GATEWAY} service (http://{GATEWAY}:8080)")
    if "--host" not in words[:-1] or words[words.index("--host") + 1] != "0.0.0.0":
        problems.append(f"{where} does not listen on 0.0.0.0 (--host), so its published port cannot reach it")
    if not environment(service).get("JOBGATE_ADMIN_API_KEY", "").strip():
        problems.append(f"{where} JOBGATE_ADMIN_API_KEY is not set (the gateway refuses Jolokia to other containers without it)")
    if GATEWAY not in (service.get("depends_on") or {}):
        problems.append(f"{where} does not depend on {GATEWAY}")
    if HAWTIO_PORT not in published_ports(service):
        problems.append(f"{where} port {HAWTIO_PORT} is not published")
    elif host_ips(service, HAWTIO_PORT) != {"127.0.0.1"}:
        problems.append(f"{where} port {HAWTIO_PORT} is published beyond this host (not on 127.0.0.1 only)")
    return problems


def host_ips(service, target):
    """The host addresses a container port is published on ("" for all of them)."""
    ips = set()
    for port in service.get("ports") or []:
        if isinstance(port, dict):
            if int(port.get("target", 0)) == target:
                ips.add(str(port.get("host_ip") or ""))
            continue
        parts = str(port).split("/", 1)[0].rsplit(":", 2)  # [ip:][host:]container
        if int(parts[-1]) == target:
            ips.add(parts[0] if len(parts) == 3 else "")
    return ips


def check(config):
    problems = []
    services = config.get("services") or {}
    if not services:
        return ["no services"]
    declared = set((config.get("volumes") or {}).keys())
    for name in [*STATE, GATEWAY, WORKER, HAWTIO]:
        if name not in services:
            problems.append(f"service {name} is missing")

    for name, service in sorted(services.items()):
        where = f"service {name}:"
        problem = image_problem(service.get("image"))
        if problem:
            problems.append(f"{where} {problem}")
        if service.get("restart") != RESTART:
            problems.append(f"{where} restart is {service.get('restart')!r}, not {RESTART}")
        health = service.get("healthcheck")
        test = (health or {}).get("test")
        if not health or health.get("disable") or not test or test in ("NONE", ["NONE"]):
            problems.append(f"{where} no healthcheck")
        for volume in service.get("volumes") or []:
            source = volume.get("source") if isinstance(volume, dict) else str(volume).split(":")[0]
            kind = volume.get("type") if isinstance(volume, dict) else None
            if kind == "volume" and source and source not in declared:
                problems.append(f"{where} volume {source} is not declared under volumes")

    if not declared:
        problems.append("no named volumes declared")
    for name, path in STATE.items():
        if name in services and path not in named_volume_targets(services[name], declared):
            problems.append(f"service {name}: its data ({path}) is not on a named volume")

    for name, mounts in PROVISIONED.items():
        if name not in services:
            continue
        binds = {}
        for volume in services[name].get("volumes") or []:
            if isinstance(volume, dict):
                binds[volume.get("target")] = str(volume.get("source"))
            else:
                bits = str(volume).split(":")
                if len(bits) >= 2:
                    binds[bits[1]] = bits[0]
        for target, source in mounts.items():
            if not binds.get(target, "").rstrip("/").endswith(source):
                problems.append(f"service {name}: {source} is not mounted at {target}")

    gateways = [n for n, s in services.items()
                if any(k.startswith("JOBGATE_") for k in environment(s)) and not runs_hawtio(s)]
    for name in sorted(set(gateways) | ({GATEWAY, WORKER} & set(services))):
        env = environment(services[name])
        where = f"service {name}:"
        if env.get("JOBGATE_SIMULATOR_ENABLED", "").lower() != "false":
            problems.append(f"{where} JOBGATE_SIMULATOR_ENABLED is not false")
        if not env.get("JOBGATE_PUBLIC_BASE_URL", "").strip():
            problems.append(f"{where} JOBGATE_PUBLIC_BASE_URL is not set")
        # Issue 38: no shipped demo credential in real use.
        if env.get("JOBGATE_ADMIN_API_KEY_SHA256", "").strip().lower() in DEMO_DIGESTS:
            problems.append(f"{where} JOBGATE_ADMIN_API_KEY_SHA256 is the demo key's digest")
        tenants = env.get("JOBGATE_TENANTS_FILES", "")
        if not tenants.strip() or "config/tenants.yaml" in tenants:
            problems.append(f"{where} JOBGATE_TENANTS_FILES is not a tenants file of the deployment's own (the demo tenants ship in config/tenants.yaml)")
        for volume in services[name].get("volumes") or []:
            source = volume.get("source") if isinstance(volume, dict) else str(volume).split(":")[0]
            if str(source).rstrip("/").endswith("config/tenants.yaml"):
                problems.append(f"{where} mounts the demo tenants file {source}")
        for key, value in EXPECTED_ROLES.get(name, {}).items():
            if env.get(key, "").lower() != value:
                problems.append(f"{where} {key} is {env.get(key)!r}, not {value}")

    if HAWTIO in services:
        problems.extend(hawtio_problems(services[HAWTIO]))

    if "artemis" in services and JMS_PORT not in published_ports(services["artemis"]):
        problems.append(f"service artemis: the JMS port {JMS_PORT} is not published")
    if WORKER in services:
        worker = services[WORKER]
        if published_ports(worker):
            problems.append(f"service {WORKER}: publishes host ports, so --scale {WORKER}=3 would clash")
        if worker.get("container_name"):
            problems.append(f"service {WORKER}: has a container_name, so it cannot scale")
    return problems


def main():
    text = open(sys.argv[1]).read() if len(sys.argv) > 1 else sys.stdin.read()
    config = yaml.safe_load(text) or {}
    problems = check(config)
    for problem in problems:
        print(f"compose.yaml: {problem}")
    if problems:
        return 1
    print(f"compose.yaml: {len(config['services'])} services checked: healthchecks, restart {RESTART}, "
          f"pinned images, named volumes, simulator off, public base URL, worker roles, monitoring provisioned, "
          f"hawtio on the gateway's Jolokia")
    return 0


if __name__ == "__main__":
    sys.exit(main())
