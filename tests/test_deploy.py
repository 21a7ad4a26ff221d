"""deploy/: what can be checked without a container runtime or a cluster.

promtool checks the Prometheus config and the alert rules (and runs their unit tests);
kubernetes-validate checks every manifest against the Kubernetes schemas it ships; every
metric name in the dashboard and the alerts must be one the referee exports; the compose
file, the Dockerfiles and the tournament config must point at things that exist and
arguments the referee accepts.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import shlex
import shutil
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from prometheus_client import Counter, Gauge, Histogram

from referee.cli import build_parser, main
from referee.match.metrics import RefereeMetrics
from referee.tournament.config import config_from_table, load_config

pytestmark = pytest.mark.timeout(120)

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "deploy"
K8S = DEPLOY / "kubernetes"
#: The Kubernetes version the manifests are validated against (its schemas ship with
#: kubernetes-validate, so the check runs offline).
K8S_VERSION = "1.30.0"
JOB = "sticheln-referee"


def _promtool() -> str:
    path = shutil.which("promtool")
    if path is None:
        pytest.fail("promtool not found: apt-get install prometheus (scripts/test.sh does)")
    return path


def _run(*cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60, cwd=ROOT)


# -- Prometheus ----------------------------------------------------------------------------


def test_promtool_accepts_the_scrape_config() -> None:
    result = _run(_promtool(), "check", "config", str(DEPLOY / "prometheus" / "prometheus.yml"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 rule files found" in result.stdout + result.stderr


def test_promtool_accepts_the_alert_rules() -> None:
    result = _run(_promtool(), "check", "rules", str(DEPLOY / "prometheus" / "alerts.yml"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS: 4 rules found" in result.stdout


def test_the_alert_rules_pass_their_unit_tests() -> None:
    result = _run(_promtool(), "test", "rules", "tests/prometheus/alerts_test.yml")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_the_alerts_an_operator_needs_are_there() -> None:
    rules = {r["alert"]: r for g in _alert_groups() for r in g["rules"]}
    assert set(rules) == {
        "StichelnRefereeDown",
        "StichelnBotFaultRateHigh",
        "StichelnThinkTimeNearLimit",
        "StichelnNoMatchFinished",
    }
    assert f'up{{job="{JOB}"}} == 0' in rules["StichelnRefereeDown"]["expr"]
    assert "sticheln_decision_limit_seconds" in rules["StichelnThinkTimeNearLimit"]["expr"]
    for rule in rules.values():
        assert rule["labels"]["severity"] in {"warning", "critical"}
        assert rule["annotations"]["summary"]


def _scrape_jobs() -> dict[str, dict[str, Any]]:
    config = yaml.safe_load((DEPLOY / "prometheus" / "prometheus.yml").read_text())
    return {j["job_name"]: j for j in config["scrape_configs"]}


def test_the_scrape_job_is_the_one_the_alerts_and_the_compose_file_name() -> None:
    job = _scrape_jobs()[JOB]
    assert job["static_configs"][0]["targets"] == ["referee:9464"]
    referee = _compose()["services"]["referee"]
    args = build_parser().parse_args(referee["command"])
    assert args.metrics_port == 9464 and args.metrics_addr == "0.0.0.0"


# -- metric names ----------------------------------------------------------------------------


def exported_names() -> set[str]:
    """Every series name a fresh RefereeMetrics registry can export (a league worker's
    included)."""
    metrics = RefereeMetrics()
    metrics.watch_worker("worker", lambda: 0)
    names: set[str] = set()
    for value in vars(metrics).values():
        if isinstance(value, Counter):
            base = value._name  # without _total
            names |= {f"{base}_total", f"{base}_created"}
        elif isinstance(value, Histogram):
            base = value._name
            names |= {f"{base}_bucket", f"{base}_sum", f"{base}_count", f"{base}_created"}
        elif isinstance(value, Gauge):
            names.add(value._name)
    # And from the exposition itself, so a metric added some other way is not missed.
    for family in metrics.registry.collect():
        names |= {s.name for s in family.samples}
    return names


PROMQL_WORDS = {
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "and",
    "or",
    "unless",
    "bool",
    "offset",
    "inf",
    "nan",
    # aggregation operators, which may come before `by (...)` instead of `(`
    "sum",
    "min",
    "max",
    "avg",
    "count",
    "group",
    "stddev",
    "stdvar",
    "topk",
    "bottomk",
    "quantile",
    "count_values",
}


def metric_names_in(expr: str) -> set[str]:
    """The metric names a PromQL expression selects (functions, keywords, label names,
    label values, grouping labels and durations left out)."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)  # label values, strings
    text = re.sub(r"\{[^}]*\}", "", text)  # label matchers
    text = re.sub(r"\[[^\]]*\]", "", text)  # range durations, $__rate_interval
    text = re.sub(
        r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", r"\1", text
    )  # grouping label lists
    names = set()
    for match in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", text):
        word = match.group()
        after = text[match.end() :].lstrip()
        if after.startswith("("):  # a function or an aggregation
            continue
        if word.lower() in PROMQL_WORDS:
            continue
        start = match.start()
        if start and (text[start - 1].isdigit() or text[start - 1] in "$."):
            continue  # 5m, 1e3, $value
        names.add(word)
    return names


def unknown_metrics(exprs: dict[str, str], known: set[str]) -> list[str]:
    """``where: name`` for every selected metric that is neither exported nor ``up``."""
    return [
        f"{where}: {name}"
        for where, expr in exprs.items()
        for name in sorted(metric_names_in(expr))
        if name not in known and name != "up"
    ]


def _alert_groups() -> list[dict[str, Any]]:
    groups: list[dict[str, Any]] = yaml.safe_load(
        (DEPLOY / "prometheus" / "alerts.yml").read_text()
    )["groups"]
    return groups


def _dashboard() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(
        (DEPLOY / "grafana" / "dashboards" / "sticheln.json").read_text()
    )
    return data


def _dashboard_exprs() -> dict[str, str]:
    return {
        f"panel {p['title']!r} {t['refId']}": t["expr"]
        for p in _dashboard()["panels"]
        for t in p.get("targets", [])
    }


def test_the_name_extractor_finds_metrics_and_skips_the_rest() -> None:
    expr = (
        'histogram_quantile(0.99, sum by (bot, le) (rate(sticheln_think_time_seconds_bucket{bot="x"}[5m])))'
        " > on() group_left() (0.8 * max(sticheln_decision_limit_seconds)) and up == 0"
        " or sticheln_bogus_total offset 5m"
    )
    assert metric_names_in(expr) == {
        "sticheln_think_time_seconds_bucket",
        "sticheln_decision_limit_seconds",
        "up",
        "sticheln_bogus_total",
    }
    assert unknown_metrics({"x": expr}, exported_names()) == ["x: sticheln_bogus_total"]


def test_exported_names_include_every_suffix() -> None:
    names = exported_names()
    assert {
        "sticheln_matches_total",
        "sticheln_decisions_total",
        "sticheln_faults_total",
        "sticheln_think_time_seconds_bucket",
        "sticheln_think_time_seconds_count",
        "sticheln_match_duration_seconds_sum",
        "sticheln_elo",
        "sticheln_matches_planned",
        "sticheln_decision_limit_seconds",
    } <= names
    assert "sticheln_decisions" not in names  # a counter is only exported with _total


def test_the_alert_rules_use_only_exported_metrics() -> None:
    exprs = {f"alert {r['alert']}": r["expr"] for g in _alert_groups() for r in g["rules"]}
    assert unknown_metrics(exprs, exported_names()) == []


def test_the_dashboard_uses_only_exported_metrics() -> None:
    exprs = _dashboard_exprs()
    assert len(exprs) >= 10
    assert unknown_metrics(exprs, exported_names()) == []


def test_the_dashboard_shows_what_an_operator_watches() -> None:
    exprs = list(_dashboard_exprs().values())

    def has(pattern: str) -> bool:
        return any(re.search(pattern, e) for e in exprs)

    assert has(r"rate\(sticheln_decisions_total")
    for q in ("0.5", "0.99"):
        assert has(
            rf"histogram_quantile\({q}, sum by \(bot, le\) \(rate\(sticheln_think_time_seconds_bucket"
        )
    assert has(r"sum by \(reason\) \(increase\(sticheln_faults_total")
    assert has(r"by \(bot\) \(sticheln_elo\)")
    for gauge in ("planned", "finished", "running"):
        assert has(rf"sticheln_matches_{gauge}\b")
    assert has(r"sticheln_connected_bots")
    # Hosted bots: the queue, voids, each worker's matches, build and validation times.
    assert has(r"sum\(sticheln_hosted_queue_depth\)")
    assert has(r"increase\(sticheln_hosted_voids_total")
    assert has(r"sum by \(worker\) \(rate\(sticheln_worker_matches_played_total")
    for name in ("build", "validation"):
        assert has(
            rf"histogram_quantile\(0.9, sum by \(le\) \(rate\(sticheln_hosted_{name}_seconds"
        )
    # Every panel reads the provisioned Prometheus through the dashboard's variable.
    assert {p["datasource"]["uid"] for p in _dashboard()["panels"]} == {"${datasource}"}


def test_grafana_provisioning_points_at_the_dashboards_and_prometheus() -> None:
    prov = DEPLOY / "grafana" / "provisioning"
    (source,) = yaml.safe_load((prov / "datasources" / "prometheus.yml").read_text())["datasources"]
    assert source["type"] == "prometheus" and source["url"] == "http://prometheus:9090"
    (provider,) = yaml.safe_load((prov / "dashboards" / "sticheln.yml").read_text())["providers"]
    grafana = _compose()["services"]["grafana"]
    mounts = dict(v.split(":")[:2] for v in grafana["volumes"] if v.startswith("./"))
    assert mounts["./grafana/dashboards"] == provider["options"]["path"]
    assert mounts["./grafana/provisioning"] == "/etc/grafana/provisioning"


# -- compose and images --------------------------------------------------------------------


def _compose() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    return data


OFFICIAL_IMAGES = re.compile(r"^(prom/prometheus|grafana/grafana(-oss)?|postgres):[\w.-]+$")


def test_the_league_and_every_worker_are_scraped_in_the_league_profile() -> None:
    jobs = _scrape_jobs()
    assert set(jobs) == {JOB, "sticheln-league", "sticheln-worker"}
    services = _compose()["services"]
    parser = build_parser()
    for job, service in (("sticheln-league", "league"), ("sticheln-worker", "worker")):
        assert services[service]["profiles"] == ["league"]
        # By DNS: each replica of `--scale worker=N` is a target of its own.
        (sd,) = jobs[job]["dns_sd_configs"]
        assert sd["names"] == [service] and sd["type"] == "A"
        args = parser.parse_args(services[service]["command"])
        if service == "worker":
            port, addr = args.metrics_port, args.metrics_addr
        else:
            config = _compose_league()
            port, addr = config.metrics_port, config.metrics_host
        assert (sd["port"], addr) == (port, "0.0.0.0")


def _compose_league() -> Any:
    """The league of the compose file's `league` service, loaded with its environment."""
    from referee.league.config import league_from_table

    league = _compose()["services"]["league"]
    args = build_parser().parse_args(league["command"])
    mounted = {
        v.split(":")[1]: DEPLOY / v.split(":")[0] for v in league["volumes"] if v.startswith("./")
    }
    inside = Path("/app") / args.config
    local = mounted[str(inside)]
    environ = {k: re.sub(r"\$\{\w+:-([^}]*)\}", r"\1", v) for k, v in league["environment"].items()}
    return league_from_table(tomllib.loads(local.read_text()), inside.parent, inside, environ)


def test_the_compose_league_hosts_bots_and_its_workers_play_them_jailed() -> None:
    services = _compose()["services"]
    config = _compose_league()
    assert config.hosting.enabled and config.hosting.workers == 0
    assert config.database == services["league"]["environment"]["DATABASE_URL"]
    assert str(config.database).startswith("postgresql://sticheln:sticheln@postgres:5432/")
    assert len(config.admin_token) >= 16
    worker = services["worker"]
    args = build_parser().parse_args(worker["command"])
    assert (args.command, args.action, args.league) == ("league", "worker", config.name)
    assert worker["environment"]["STICHELN_DATABASE"] == config.database
    assert worker["depends_on"]["league"] == {"condition": "service_healthy"}
    # Both run uploaded code in the jail's gVisor tier, from the league image: root with
    # CAP_SYS_ADMIN, without the runtime's seccomp and AppArmor profiles (docs/hosting.md).
    for name in ("league", "worker"):
        assert services[name]["build"]["dockerfile"] == "deploy/docker/league.Dockerfile"
        assert services[name]["image"] == "sticheln-league:latest"
        assert services[name]["user"] == "0:0" and services[name]["cap_add"] == ["SYS_ADMIN"]
        assert "privileged" not in services[name], name
        assert set(services[name]["security_opt"]) == {
            "seccomp=unconfined",
            "apparmor=unconfined",
            "systempaths=unconfined",
        }, name
    # The code folder lies in the results volume, outside the records' folder.
    assert Path("/app/results") in config.hosting.code_dir.parents
    assert config.out not in config.hosting.code_dir.parents


def test_every_compose_image_is_built_here_or_official() -> None:
    services = _compose()["services"]
    assert {"referee", "prometheus", "grafana"} <= set(services)
    for name, service in services.items():
        build = service.get("build")
        if build is not None:
            dockerfile = (DEPLOY / build["context"] / build["dockerfile"]).resolve()
            assert dockerfile.parent == DEPLOY / "docker", f"{name}: {dockerfile}"
            assert dockerfile.name.endswith(".Dockerfile") and dockerfile.is_file(), name
            assert (DEPLOY / build["context"]).resolve() == ROOT, name
        else:
            assert OFFICIAL_IMAGES.match(service["image"]), f"{name}: {service['image']}"


def _compose_config(path: Path) -> subprocess.CompletedProcess[str]:
    """``docker-compose config`` (Debian's docker-compose 1.29, which needs no daemon):
    the file against the Compose specification's schema, every profile included."""
    tool = shutil.which("docker-compose")
    if tool is None:
        pytest.fail(
            "docker-compose not found: apt-get install docker-compose (scripts/test.sh does)"
        )
    return _run(tool, "-f", str(path), "--profile", "match", "--profile", "league", "config", "-q")


def test_the_compose_file_is_valid_compose(tmp_path: Path) -> None:
    result = _compose_config(DEPLOY / "compose.yaml")
    assert result.returncode == 0, result.stderr
    # The check can fail: the same file with a service's ports of the wrong type.
    broken = _compose()
    broken["services"]["referee"]["ports"] = "9464"
    (tmp_path / "compose.yaml").write_text(yaml.safe_dump(broken))
    result = _compose_config(tmp_path / "compose.yaml")
    assert result.returncode != 0
    assert "ports" in result.stderr


def test_compose_mounts_files_that_exist() -> None:
    for name, service in _compose()["services"].items():
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            if source.startswith("."):
                assert (DEPLOY / source).exists(), f"{name}: {source}"


def test_compose_commands_are_ones_the_referee_accepts() -> None:
    services = _compose()["services"]
    parser = build_parser()
    tour = parser.parse_args(services["referee"]["command"])
    assert tour.command == "tournament" and tour.port == 50051
    assert tour.metrics_linger == float("inf")
    load_config(ROOT / tour.file)
    match = parser.parse_args(services["match"]["command"])
    assert match.command == "match" and match.port == 50051
    from referee.config.bots import load_bot

    bots = [load_bot(ROOT / b) for b in match.bot]
    (external,) = [b for b in bots if b.external]
    env = services["node-bot"]["environment"]
    assert env["STICHELN_TOKEN"] == external.token
    assert env["STICHELN_REFEREE"] == "match:50051"


def _dockerfile(name: str) -> list[str]:
    """The instructions of a Dockerfile, continuation lines joined."""
    text = (DEPLOY / "docker" / name).read_text()
    text = re.sub(r"\\\n", " ", text)
    return [line.strip() for line in text.splitlines() if line.strip() and line[0] != "#"]


def _ignored() -> list[str]:
    lines = (ROOT / ".dockerignore").read_text().splitlines()
    return [ln.strip() for ln in lines if ln.strip() and not ln.startswith("#")]


@pytest.mark.parametrize("name", ["referee.Dockerfile", "bots.Dockerfile", "league.Dockerfile"])
def test_dockerfile_copies_exist_and_are_in_the_build_context(name: str) -> None:
    ignored = _ignored()
    copies = 0
    for line in _dockerfile(name):
        if not line.startswith("COPY ") or "--from=" in line:
            continue
        words = shlex.split(line)[1:]
        sources = [w for w in words[:-1] if not w.startswith("--")]
        for source in sources:
            copies += 1
            matches = list(ROOT.glob(source))
            assert matches, f"{name}: COPY {source}: no such file in the repository"
            top = source.split("/")[0]
            assert top not in ignored and source not in ignored, (
                f"{name}: COPY {source} is excluded by .dockerignore"
            )
    assert copies >= (3 if name == "league.Dockerfile" else 5)


@pytest.mark.parametrize("name", ["referee.Dockerfile", "bots.Dockerfile"])
def test_image_is_slim_non_root_and_health_checked(name: str) -> None:
    lines = _dockerfile(name)
    stages = [ln for ln in lines if ln.startswith("FROM ")]
    assert len(stages) >= 2, "multi-stage"
    assert stages[-1] == "FROM python:3.11-slim"
    (user,) = [ln for ln in lines if ln.startswith("USER ")]
    uid = user.split()[1].split(":")[0]
    assert uid.isdigit() and int(uid) > 0
    (health,) = [ln for ln in lines if ln.startswith("HEALTHCHECK ")]
    assert "referee.runtime.healthcheck" in health


def test_the_referee_image_carries_the_bot_jail() -> None:
    """bubblewrap and the system-call filter's library are installed in the final stage,
    and pyseccomp comes with the referee's own dependencies."""
    lines = _dockerfile("referee.Dockerfile")
    final = lines[max(i for i, ln in enumerate(lines) if ln.startswith("FROM ")) :]
    installs = " ".join(ln for ln in final if ln.startswith("RUN ") and "apt-get install" in ln)
    assert {"bubblewrap", "libseccomp2"} <= set(installs.split())
    project = (ROOT / "pyproject.toml").read_text()
    assert '"pyseccomp' in project.split("[project.optional-dependencies]")[0]


#: What the league image installs for the jail and the kits (docs/hosting.md).
LEAGUE_IMAGE_PACKAGES = {
    "runsc", "bubblewrap", "libseccomp2", "nodejs", "cmake", "make", "g++", "pkg-config",
    "libgrpc++-dev", "libprotobuf-dev", "libssl-dev", "protobuf-compiler",
    "protobuf-compiler-grpc", "golang-go", "golang-google-grpc-dev",
    "golang-github-golang-protobuf-1-5-dev", "protoc-gen-go", "protoc-gen-go-grpc",
    "openjdk-17-jdk-headless", "libgrpc-java", "libprotobuf-java", "libnetty-java",
    "libguava-java", "libperfmark-java", "libgoogle-gson-java",
    "libgeronimo-annotation-1.3-spec-java", "protobuf-compiler-grpc-java-plugin",
}  # fmt: skip


def _final_installs(name: str) -> set[str]:
    lines = _dockerfile(name)
    final = lines[max(i for i, ln in enumerate(lines) if ln.startswith("FROM ")) :]
    found: set[str] = set()
    for line in final:
        if line.startswith("RUN ") and "apt-get install" in line:
            for command in line.split("&&"):
                words = command.split()
                if words[:2] == ["apt-get", "install"]:
                    found |= {w for w in words[2:] if not w.startswith("-")}
    return found


def test_the_league_image_carries_runsc_and_what_the_kits_build_with() -> None:
    """Debian 12's packages (runsc, the gVisor tier, from bookworm-backports: its systrap
    platform), the referee's virtualenv, root (gVisor needs a root referee) and a health
    check on the league's port."""
    lines = _dockerfile("league.Dockerfile")
    stages = [ln for ln in lines if ln.startswith("FROM ")]
    assert len(stages) == 2 and stages[-1] == "FROM python:3.11-slim-bookworm"
    assert _final_installs("league.Dockerfile") >= LEAGUE_IMAGE_PACKAGES
    commands = [c.split() for ln in lines if ln.startswith("RUN ") for c in ln[4:].split("&&")]
    (runsc,) = [c for c in commands if c[:2] == ["apt-get", "install"] and "runsc" in c]
    assert "-t bookworm-backports" in " ".join(runsc) and runsc[-1] == "runsc"
    assert any("bookworm-backports main" in " ".join(c) for c in commands)
    (user,) = [ln for ln in lines if ln.startswith("USER ")]
    assert user == "USER 0:0"
    (health,) = [ln for ln in lines if ln.startswith("HEALTHCHECK ")]
    assert "referee.runtime.healthcheck" in health and "127.0.0.1:50051" in health
    (cmd,) = [ln for ln in lines if ln.startswith("CMD ")]
    args = build_parser().parse_args(json.loads(cmd[4:]))
    assert args.command == "serve" and (ROOT / args.config).is_file()


@pytest.mark.timeout(300)
def test_every_tool_a_kit_builds_or_runs_with_comes_with_the_league_image() -> None:
    """Each program a kit's bot file or build script names, and the ones CMake and Go look
    for, belongs to a Debian package the league image installs (asked of dpkg here)."""
    if shutil.which("dpkg") is None:
        pytest.skip("dpkg is needed")
    tools = {"node", "cmake", "g++", "protoc", "grpc_cpp_plugin", "go",
             "protoc-gen-go", "protoc-gen-go-grpc", "runsc", "bwrap",
             "java", "javac", "grpc_java_plugin"}  # fmt: skip
    kits = ROOT / "sample_bots"
    java_build = (kits / "java" / "build.sh").read_text()
    said = " ".join(
        [(kits / k / "bot.toml").read_text() for k in ("python", "node", "cpp", "go", "java")]
        + [(kits / "go" / "build.sh").read_text(), (kits / "cpp" / "CMakeLists.txt").read_text()]
        + [java_build]
    )
    for tool in ("node", "cmake", "protoc", "go build", "protoc-gen-go", "grpc_cpp_plugin",
                 '"java"', "javac", "grpc_java_plugin"):  # fmt: skip
        assert tool in said, tool  # the kits still use what this test checks
    # The jars the Java kit's build compiles against and copies into its folder.
    names = re.search(r'(?m)^JARS="([^"]*)"', java_build)
    assert names is not None, 'sample_bots/java/build.sh names its jars in JARS="..."'
    jars = [*names[1].split(), "geronimo-annotation-1.3-spec"]
    assert "geronimo-annotation-1.3-spec.jar" in java_build
    installs = _final_installs("league.Dockerfile")
    files = {
        "/usr/include/grpcpp/grpcpp.h",
        "/usr/include/google/protobuf/message.h",
        "/usr/include/openssl/sha.h",
        "/usr/share/gocode/src/google.golang.org/grpc/server.go",
        "/usr/share/gocode/src/google.golang.org/protobuf/proto/encode.go",
    }
    files |= {str(Path("/usr/share/java", f"{jar}.jar").resolve()) for jar in jars}
    paths = sorted({str(Path(shutil.which(t) or t).resolve()) for t in tools} | files)
    for path in paths:
        if not Path(path).exists():
            pytest.skip(f"{path} is not installed here (scripts/test.sh installs it)")
    found = _run("dpkg", "-S", *paths)  # one call: a loaded machine answers slowly
    assert found.returncode == 0, found.stderr
    owners = {}
    for line in found.stdout.splitlines():
        names, path = line.split(": ", 1)
        owners[path] = {n.strip().split(":")[0] for n in names.split(",")}
    assert set(owners) == set(paths)
    pulled = installs | _depends(installs)
    for path, packages in owners.items():
        assert packages & pulled, (path, packages)


def _depends(packages: set[str]) -> set[str]:
    """What ``packages`` depend on directly (apt installs these with them)."""
    done = _run("apt-cache", "depends", "--important", *sorted(packages))
    assert done.returncode == 0, done.stderr
    return {
        ln.split(":", 1)[1].strip().strip("<>")
        for ln in done.stdout.splitlines()
        if ln.strip().startswith(("Depends:", "|Depends:", "PreDepends:"))
    }


def test_the_referee_image_holds_what_its_tournament_starts() -> None:
    """Every bot of deploy/league.toml runs a script the referee image copies."""
    config = load_config(DEPLOY / "league.toml")
    copied = [
        shlex.split(ln)[1:-1]
        for ln in _dockerfile("referee.Dockerfile")
        if ln.startswith("COPY ") and "--from=" not in ln
    ]
    copied_paths = {(ROOT / s).resolve() for group in copied for s in group}
    for bot in config.bots:
        script = (bot.workdir / bot.command[1]).resolve()
        assert script.is_file(), f"{bot.name}: {script}"
        assert any(script == p or p in script.parents for p in copied_paths), (
            f"{bot.name}: {script.relative_to(ROOT)} is not copied into the referee image"
        )
    (cmd,) = [ln for ln in _dockerfile("referee.Dockerfile") if ln.startswith("CMD ")]
    args = build_parser().parse_args(json.loads(cmd[4:]))
    assert (ROOT / args.file).resolve() == (DEPLOY / "league.toml").resolve()
    assert args.port == 50051  # where the HEALTHCHECK asks


def test_the_deploy_tournament_loads_and_dry_runs() -> None:
    config = load_config(DEPLOY / "league.toml")
    assert len(config.bots) == 4 and config.clock.decision_ms == 1000
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = main(["tournament", str(DEPLOY / "league.toml"), "--dry-run"])
    assert status == 0
    assert out.getvalue().startswith("tournament deploy-league: 12 matches, 4 tables of 3")


# -- Kubernetes ------------------------------------------------------------------------------


def _manifests() -> list[tuple[Path, dict[str, Any]]]:
    found = []
    for path in sorted(K8S.rglob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc is not None:
                found.append((path, doc))
    return found


def _one(kind: str, name: str) -> dict[str, Any]:
    (doc,) = [d for _, d in _manifests() if d["kind"] == kind and d["metadata"]["name"] == name]
    return doc


def test_every_manifest_is_valid_for_the_pinned_kubernetes_version() -> None:
    manifests = _manifests()
    kinds = sorted({d["kind"] for _, d in manifests})
    assert kinds == [
        "ConfigMap",
        "Deployment",
        "Job",
        "Namespace",
        "PersistentVolumeClaim",
        "Secret",
        "Service",
        "StatefulSet",
    ]
    for path, doc in manifests:
        try:
            kubernetes_validate.validate(doc, K8S_VERSION, strict=True)
        except kubernetes_validate.ValidationError as exc:
            pytest.fail(f"{path.relative_to(ROOT)}: {doc['kind']} {doc['metadata']['name']}: {exc}")
        if doc["kind"] != "Namespace":
            assert doc["metadata"]["namespace"] == "sticheln", path


def test_the_validator_refuses_a_broken_manifest() -> None:
    deployment = _one("Deployment", "sticheln-referee")
    broken = json.loads(json.dumps(deployment))
    broken["spec"]["template"]["spec"]["containers"][0]["livenessProbe"]["grpc"]["port"] = "grpc"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, K8S_VERSION, strict=True)
    broken = json.loads(json.dumps(deployment))
    broken["spec"]["replica"] = 1
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, K8S_VERSION, strict=True)


def _container(doc: dict[str, Any]) -> dict[str, Any]:
    (container,) = doc["spec"]["template"]["spec"]["containers"]
    result: dict[str, Any] = container
    return result


def test_the_referee_deployment_probes_grpc_and_is_scraped() -> None:
    deployment = _one("Deployment", "sticheln-referee")
    pod = deployment["spec"]["template"]
    container = _container(deployment)
    args = build_parser().parse_args(container["args"])
    assert args.command == "tournament" and args.host == "0.0.0.0"
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"grpc": args.port, "metrics": args.metrics_port}
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert container[probe]["grpc"]["port"] == args.port, probe
    annotations = pod["metadata"]["annotations"]
    assert annotations["prometheus.io/scrape"] == "true"
    assert int(annotations["prometheus.io/port"]) == args.metrics_port
    assert pod["spec"]["securityContext"]["runAsNonRoot"] is True
    assert pod["spec"]["securityContext"]["runAsUser"] == 10001  # the image's USER
    assert container["resources"]["requests"] and container["resources"]["limits"]
    service = _one("Service", "sticheln-referee")
    assert service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]
    assert {p["targetPort"] for p in service["spec"]["ports"]} == set(ports)
    volumes = {v["name"]: v for v in pod["spec"]["volumes"]}
    assert volumes["config"]["configMap"]["name"] == "sticheln-league"
    assert "/config" in {m["mountPath"] for m in container["volumeMounts"]}


def test_the_shard_job_runs_k_shards_and_the_merge_follows() -> None:
    job = _one("Job", "sticheln-shards")
    spec = job["spec"]
    assert spec["completionMode"] == "Indexed"
    k = spec["completions"]
    assert k == spec["parallelism"] and k > 1
    container = _container(job)
    args = container["args"]
    assert args[:6] == [
        "tournament",
        "/config/league.toml",
        "--shard",
        f"$(JOB_COMPLETION_INDEX)/{k}",
        "--db",
        "$(DATABASE_URL)",
    ]
    env = {e["name"]: e for e in container["env"]}
    assert env["DATABASE_URL"]["valueFrom"]["secretKeyRef"] == {
        "name": "sticheln-db",
        "key": "DATABASE_URL",
    }
    secret = _one("Secret", "sticheln-db")
    assert secret["stringData"]["DATABASE_URL"].startswith("postgresql://")
    merge = _container(_one("Job", "sticheln-merge"))
    assert merge["args"] == ["merge", "--db", "$(DATABASE_URL)", "/config/league.toml"]
    assert {e["name"] for e in merge["env"]} == {"DATABASE_URL"}
    # The merge is kept out of `kubectl apply -f deploy/kubernetes/` (not recursive).
    (merge_file,) = [p for p, d in _manifests() if d["metadata"]["name"] == "sticheln-merge"]
    assert merge_file.parent != K8S
    parser = build_parser()
    if "merge" in parser._subparsers._group_actions[0].choices:  # type: ignore[union-attr]
        shard_args = parser.parse_args([a.replace("$(JOB_COMPLETION_INDEX)", "0") for a in args])
        assert shard_args.port == 50051
        parser.parse_args(merge["args"])


def test_the_configmap_tournament_loads() -> None:
    configmap = _one("ConfigMap", "sticheln-league")
    text = configmap["data"]["league.toml"]
    source = Path("/config/league.toml")
    config = config_from_table(tomllib.loads(text), base=source.parent, source=source)
    assert config.out == Path("/data/results")
    assert {b.workdir for b in config.bots} == {Path("/app/sample_bots")}
    # The same bots as deploy/league.toml, which the image's tests cover.
    local = load_config(DEPLOY / "league.toml")
    assert [b.name for b in config.bots] == [b.name for b in local.bots]
    assert [b.command for b in config.bots] == [b.command for b in local.bots]


def test_the_league_deployment_serves_the_configmap_league_on_the_secret_database() -> None:
    from referee.league.config import league_from_table

    deployment = _one("Deployment", "sticheln-league")
    spec = deployment["spec"]
    assert spec["replicas"] == 1 and spec["strategy"] == {"type": "Recreate"}
    pod = spec["template"]
    container = _container(deployment)
    args = build_parser().parse_args(container["args"])
    assert args.command == "serve" and args.host is None and args.port is None
    # The league file loads with the environment the Secret gives the container.
    secret = _one("Secret", "sticheln-league")["stringData"]
    environ = {
        e["name"]: secret[e["valueFrom"]["secretKeyRef"]["key"]]
        for e in container["env"]
        if e["valueFrom"]["secretKeyRef"]["name"] == "sticheln-league"
    }
    assert len(environ) == len(container["env"]) == 2
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["spec"]["volumes"]}
    configmap = _one("ConfigMap", volumes["config"]["configMap"]["name"])
    source = Path(mounts["config"]) / Path(args.config).name
    assert Path(args.config) == source and list(configmap["data"]) == [source.name]
    config = league_from_table(
        tomllib.loads(configmap["data"][source.name]), source.parent, source, environ
    )
    assert isinstance(config.database, str) and config.database.startswith("postgresql://")
    assert config.database == secret["DATABASE_URL"]
    assert config.admin_token == secret["STICHELN_ADMIN_TOKEN"]
    text = configmap["data"][source.name]
    assert "postgresql://" not in text and "change-me" not in text  # no secret in the file
    # The records under `out` stay on the claimed volume.
    records = volumes["records"]["persistentVolumeClaim"]["claimName"]
    assert _one("PersistentVolumeClaim", records)
    assert Path(mounts["records"]) in config.out.parents
    # Ports, probes (the gRPC health service on the league's port) and scraping.
    assert config.host == config.metrics_host == config.web_host == "0.0.0.0"
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"grpc": config.port, "metrics": config.metrics_port, "web": config.web_port}
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert container[probe]["grpc"] == {"port": config.port}, probe
    annotations = pod["metadata"]["annotations"]
    assert annotations["prometheus.io/scrape"] == "true"
    assert int(annotations["prometheus.io/port"]) == config.metrics_port
    grace = pod["spec"]["terminationGracePeriodSeconds"]
    assert config.shutdown_grace_s < grace  # running matches get their grace, then exit 0
    assert pod["spec"]["securityContext"]["runAsUser"] == 0  # the gVisor tier's root
    service = _one("Service", "sticheln-league")
    assert service["spec"]["selector"] == spec["selector"]["matchLabels"]
    assert {p["targetPort"] for p in service["spec"]["ports"]} == set(ports)
    # Kept out of `kubectl apply -f deploy/kubernetes/` (not recursive).
    league = {
        ("Secret", "sticheln-league"),
        ("ConfigMap", configmap["metadata"]["name"]),
        ("PersistentVolumeClaim", records),
        ("Deployment", "sticheln-league"),
        ("Service", "sticheln-league"),
    }
    found = {p.parent for p, d in _manifests() if (d["kind"], d["metadata"]["name"]) in league}
    assert found == {K8S / "league"}


def test_the_league_workers_play_the_configmap_league_from_the_secret_database() -> None:
    from referee.league.config import league_from_table

    worker = _one("Deployment", "sticheln-league-worker")
    container = _container(worker)
    args = build_parser().parse_args(container["args"])
    assert (args.command, args.action) == ("league", "worker")
    league = _container(_one("Deployment", "sticheln-league"))
    configmap = _one("ConfigMap", "sticheln-league-service")
    secret = _one("Secret", "sticheln-league")["stringData"]
    environ = {
        "DATABASE_URL": secret["DATABASE_URL"],
        "STICHELN_ADMIN_TOKEN": secret["STICHELN_ADMIN_TOKEN"],
    }
    source = Path("/config/league.toml")
    config = league_from_table(
        tomllib.loads(configmap["data"]["league.toml"]), source.parent, source, environ
    )
    # The workers play the league the league pod serves, from the same database.
    assert config.hosting.enabled and config.hosting.workers == 0
    assert args.league == config.name
    (env,) = container["env"]
    assert env["name"] == "STICHELN_DATABASE" and env["valueFrom"]["secretKeyRef"] == {
        "name": "sticheln-league",
        "key": "DATABASE_URL",
    }
    mounts = {m["mountPath"] for m in container["volumeMounts"]}
    assert {str(Path(args.code_dir).parent), "/tmp"} <= mounts
    # Both run the jail's gVisor tier, from the league image: the league builds and
    # validates uploads, the workers play. Root with CAP_SYS_ADMIN added, no runtime
    # seccomp or AppArmor profile; not privileged, nothing of the host.
    assert config.sandbox == "gvisor"  # refuses to start where runsc cannot run
    assert args.sandbox == "gvisor"
    for deployment, c in ((worker, container), (_one("Deployment", "sticheln-league"), league)):
        pod = deployment["spec"]["template"]["spec"]
        assert c["image"] == "sticheln-league:latest"
        assert pod["securityContext"]["runAsUser"] == 0
        assert pod["securityContext"]["seccompProfile"] == {"type": "Unconfined"}
        assert pod["securityContext"]["appArmorProfile"] == {"type": "Unconfined"}
        assert c["securityContext"]["capabilities"] == {"add": ["SYS_ADMIN"]}
        assert "privileged" not in c["securityContext"]
        assert "allowPrivilegeEscalation" not in c["securityContext"]  # refused with SYS_ADMIN
        assert not {"hostNetwork", "hostPID", "hostIPC"} & set(pod)
        assert all("hostPath" not in v for v in pod["volumes"])
        assert "/tmp" in {m["mountPath"] for m in c["volumeMounts"]}  # runsc's bundles


def test_each_league_worker_is_a_scrape_target_of_its_own() -> None:
    worker = _one("Deployment", "sticheln-league-worker")
    container = _container(worker)
    args = build_parser().parse_args(container["args"])
    assert args.metrics_addr == "0.0.0.0"
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"metrics": args.metrics_port}
    annotations = worker["spec"]["template"]["metadata"]["annotations"]
    assert annotations["prometheus.io/scrape"] == "true"
    assert int(annotations["prometheus.io/port"]) == args.metrics_port
    assert annotations["prometheus.io/path"] == "/metrics"
