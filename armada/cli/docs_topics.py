"""``armadactl docs [TOPIC]``: short help on topics, offline.

Armada's ``armadactl docs`` shows its whole manual in a pager. Ours prints one topic to
standard output (no pager, no colours), or the list of topics when none is named; the
reference pages are in ``docs/`` of the project (``docs/armadactl-armada.md``).
"""

from __future__ import annotations

import argparse
import sys

from armada.cli.exitcodes import EXIT_OK, EXIT_USAGE


def out(text: str) -> None:
    print(text, flush=True)


TOPICS: dict[str, tuple[str, str]] = {
    "connection": (
        "where armadactl sends its requests",
        """\
Each setting comes from, first match wins: the flag (--url or --armadaUrl, --username,
--password, --token), the environment (ARMADA_URL, ARMADA_USERNAME, ARMADA_PASSWORD,
ARMADA_TOKEN), the config file (--config, $ARMADACTL_CONFIG or ~/.armadactl.yaml), then
the default http://127.0.0.1:8000.

armadactl talks to the REST API of the web server. An address without a scheme
(Armada's armadaUrl: localhost:50051) is tried as http://host:port; when the server
there answers with gRPC (Armada's gRPC API), armadactl uses the REST API at
$ARMADA_REST_URL if set, else on port 8000 of the same host (the web server's default
port). A context's armadaRestUrl is used before its armadaUrl.""",
    ),
    "contexts": (
        "Armada's config file with several servers",
        """\
    currentContext: prod
    contexts:
      prod: {armadaUrl: armada.example.com:50051, basicAuth: {username: a, password: b}}
      dev:  {url: http://127.0.0.1:8000}

armadactl config get-contexts | current-context | use-context NAME; --context NAME (or
$ARMADA_CONTEXT) picks one for a single command.""",
    ),
    "auth": (
        "signing in: tokens and passwords",
        """\
armadactl login asks for your password once and stores an API token in the config file
(mode 0600); later commands send it (Authorization: Token ...). armadactl logout revokes
it. --username/--password (HTTP basic auth) work too, but each request then pays for the
password hashing on the server.""",
    ),
    "submit": (
        "job files and what submit prints",
        """\
    queue: analytics
    jobSetId: nightly
    jobs:
      - priority: 0
        podSpec: {containers: [{name: main, image: busybox, args: [sleep, "10"],
                  resources: {requests: {cpu: 100m, memory: 64Mi}}}]}

armadactl submit FILE prints one line per job, as Armada's armadactl does:
    Submitted job with id <job id> to job set <job set>
so a script takes the id with awk '{print $5}'. --dry-run checks the file and sends
nothing.""",
    ),
    "jobs": (
        "cancel, preempt and reprioritize; the lines they print",
        """\
armadactl cancel job QUEUE JOBSET ID      Requested cancellation for jobs <ids>
armadactl cancel job-set QUEUE JOBSET     Requested cancellation for job set <job set>
armadactl preempt job QUEUE JOBSET ID REASON   Requested preemption for job <id>
armadactl reprioritize job-set QUEUE JOBSET P  Reprioritized jobs with ID: (then one a line)
Each first prints the Requesting ... line Armada prints. armadactl watch QUEUE JOBSET
follows the job set's events (--exit-if-inactive to stop when every job has ended).""",
    ),
    "queues": (
        "queues and acting on many at once",
        """\
create|update queue NAME [--priority-factor --owners --group-owners --labels
--retry-policies], get queue NAME, get queues, delete queue NAME, cordon|uncordon queue
NAME... ; cancel|preempt queues NAMES or -l key=value (-s states, -p classes, --dry-run).
create queue prints "Created queue NAME", update "Updated queue NAME", delete "Deleted
queue NAME".""",
    ),
    "executors": (
        "executors: cordon, stop their jobs, delete",
        """\
get executors; get executor ID; cordon executor ID [REASON]; uncordon executor ID.
cancel|preempt executor NAME (-p PC1,PC2 | -a) [-q Q1,Q2] [--pools P1,P2] [--reason]:
every active job on the executor that matches; needs cancel_any_jobs or
preempt_any_jobs. cancel|preempt node NODE -e EXECUTOR does the same for one node.
delete executor NAME retires it (update_executor_settings): its credentials are
revoked, it leaves the listings, its active runs end by lease expiry; a new credential
brings the cluster back. create executor-credential ID prints a key, once.""",
    ),
    "output": (
        "output formats and exit codes",
        """\
get commands take -o table (default), yaml or json. Errors go to stderr as
"Error: <message>" with one "  <field>: <message>" line per field. Exit codes: 0 done,
1 refused (by the server or a local check), 2 usage error, 130 interrupted.""",
    ),
}


def cmd_docs(args: argparse.Namespace) -> int:
    topic = (args.topic or "").strip().lower()
    if not topic:
        out("armadactl docs TOPIC shows one of:")
        width = max(len(name) for name in TOPICS)
        for name, (summary, _) in TOPICS.items():
            out(f"  {name.ljust(width)}  {summary}")
        return EXIT_OK
    if topic not in TOPICS:
        print(
            f"Error: no topic {args.topic!r}; topics: {', '.join(TOPICS)}",
            file=sys.stderr,
        )
        return EXIT_USAGE
    summary, text = TOPICS[topic]
    out(f"{topic}: {summary}\n\n{text}")
    return EXIT_OK
